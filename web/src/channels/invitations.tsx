// Pending invitations in the sidebar (docs/web.md, "Invitations"): a person named in a group by
// someone else is only invited (consent before membership, docs/security.md) and joins by pressing
// Accept. Kept in its own component so the sidebar list itself stays about channels.
import { useCallback, useEffect, useState } from 'preact/hooks';
import { useOnReconnect } from '../hooks.js';
import { describeError, type RpcClient } from '../rpc.js';
import type { InvitationPage } from '../wire.js';

/** Invitations read at once: a page; "and more" says the rest are there (the CLI lists them all). */
const SHOWN = 50;

type Invitation = InvitationPage['invitations'][number];

export interface InvitationsProps {
  client: RpcClient;
  /** After Accept: the page shows the channel (it also arrives as `channel.joined`). */
  onJoined: (channelId: string) => void;
}

export function Invitations({ client, onJoined }: InvitationsProps) {
  const [page, setPage] = useState<InvitationPage | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(() => {
    client
      .call<InvitationPage>('channel.invitations', { limit: SHOWN })
      .then((next) => {
        setPage(next);
        setError(null);
      })
      // An older host without invitations, or a failed read: the list stays as it was.
      .catch(() => undefined);
  }, [client]);
  useOnReconnect(client, load);
  // The host pushes `invitations.changed` to this person's channel-list subscription (app.tsx
  // subscribes it): an invitation arrived, was withdrawn, or was answered in another tab.
  useEffect(() => client.on('invitations.changed', load), [client, load]);
  useEffect(load, [load]);

  const answer = async (invitation: Invitation, method: 'channel.accept' | 'channel.decline') => {
    setBusy(invitation.channel.id);
    try {
      await client.call(method, { channel_id: invitation.channel.id });
      setPage(
        (current) =>
          current && {
            ...current,
            invitations: current.invitations.filter((i) => i.channel.id !== invitation.channel.id),
          },
      );
      setError(null);
      if (method === 'channel.accept') onJoined(invitation.channel.id);
    } catch (err) {
      setError(`could not ${method === 'channel.accept' ? 'accept' : 'decline'}: ${describeError(err)}`);
      load();
    } finally {
      setBusy(null);
    }
  };

  if (page === null || (page.invitations.length === 0 && error === null)) return null;
  return (
    <section class="invitations" aria-labelledby="invitations-heading">
      <h2 id="invitations-heading">Invitations</h2>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <ul class="nav-list">
        {page.invitations.map((invitation) => (
          <li key={invitation.channel.id} class="invitation" data-invitation={invitation.channel.id}>
            <span class="nav-label">
              #{invitation.channel.name} <span class="muted small">from {invitation.invitedBy.name}</span>
            </span>
            <span class="invitation-actions">
              <button
                type="button"
                class="button primary"
                disabled={busy !== null}
                aria-label={`Accept #${invitation.channel.name}`}
                onClick={() => void answer(invitation, 'channel.accept')}
              >
                Accept
              </button>
              <button
                type="button"
                class="button ghost"
                disabled={busy !== null}
                aria-label={`Decline #${invitation.channel.name}`}
                onClick={() => void answer(invitation, 'channel.decline')}
              >
                Decline
              </button>
            </span>
          </li>
        ))}
      </ul>
      {page.nextCursor !== null && (
        <p class="muted small">More invitations: sluice channel invitations lists them all.</p>
      )}
    </section>
  );
}
