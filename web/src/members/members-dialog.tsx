// A group's members from its header: "Members (N)" opens a dialog listing them, with Remove next to
// each and an Add picker (any agent or person not yet in). The host decides who may do what
// (docs/security.md): any member may add (a person an agent names is only invited); only the
// channel's creator removes others. A refusal is shown as the host's one line, and nothing changed.

import { useCallback, useEffect, useState } from 'preact/hooks';
import { describeError, type RpcClient } from '../rpc.js';
import { kindLabel, loadPrincipals, Modal } from '../start/start-dialogs.js';
import type { ChannelCreated, ChannelListPage, ChannelSummary, Hello, PrincipalRef } from '../wire.js';

/** The channel as the host lists it now (walks `channel.list`; null once the caller is not in it). */
async function freshChannel(client: RpcClient, channelId: string): Promise<ChannelSummary | null> {
  let cursor: string | null = null;
  do {
    const page: ChannelListPage = await client.call<ChannelListPage>(
      'channel.list',
      cursor === null ? {} : { cursor },
    );
    const found = page.channels.find((c) => c.id === channelId);
    if (found) return found;
    cursor = page.nextCursor;
  } while (cursor !== null);
  return null;
}

interface MembersProps {
  client: RpcClient;
  channel: ChannelSummary;
}

/** The header button; the count is the host's `memberCount`. */
export function MembersButton({ client, channel }: MembersProps) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button
        type="button"
        class="button ghost"
        aria-haspopup="dialog"
        onClick={() => setOpen(true)}
        aria-label={`Members of #${channel.name} (${channel.memberCount})`}
      >
        Members ({channel.memberCount})
      </button>
      {open && <MembersDialog client={client} channel={channel} onClose={() => setOpen(false)} />}
    </>
  );
}

function MembersDialog({ client, channel, onClose }: MembersProps & { onClose: () => void }) {
  const [me, setMe] = useState<PrincipalRef | null>(null);
  const [current, setCurrent] = useState<ChannelSummary>(channel);
  const [everyone, setEveryone] = useState<PrincipalRef[] | null>(null);
  const [toAdd, setToAdd] = useState('');
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [confirmRemove, setConfirmRemove] = useState<string | null>(null);

  const reload = useCallback(async () => {
    const fresh = await freshChannel(client, channel.id);
    if (fresh) setCurrent(fresh);
  }, [client, channel.id]);
  useEffect(() => {
    let live = true;
    loadPrincipals(client)
      .then((all) => live && setEveryone(all))
      .catch((err) => live && setError(`could not list agents and people: ${describeError(err)}`));
    client
      .call<Hello>('host.hello', {})
      .then((hello) => live && setMe(hello.principal))
      .catch(() => undefined);
    void reload().catch(() => undefined);
    return () => {
      live = false;
    };
  }, [client, reload]);

  const memberNames = new Set(current.members.map((m) => m.name));
  const candidates = (everyone ?? []).filter((p) => !memberNames.has(p.name));
  const add = async () => {
    if (toAdd === '' || busy) return;
    setBusy(true);
    setError(null);
    setNote(null);
    try {
      const change = await client.call<ChannelCreated>('channel.addMember', {
        channelId: channel.id,
        member: toAdd,
      });
      setNote(
        change.invited.length > 0
          ? `${change.invited.join(', ')} invited: they join when they accept.`
          : `${toAdd} added.`,
      );
      setToAdd('');
      await reload();
    } catch (err) {
      setError(`${toAdd} not added: ${describeError(err)}`);
    } finally {
      setBusy(false);
    }
  };
  const remove = async (name: string) => {
    setBusy(true);
    setError(null);
    setNote(null);
    try {
      await client.call('channel.removeMember', { channelId: channel.id, member: name });
      setNote(`${name} removed.`);
      setConfirmRemove(null);
      await reload();
    } catch (err) {
      setError(`${name} not removed: ${describeError(err)}`);
      setConfirmRemove(null);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal title={`Members of #${current.name}`} titleId="members-title" onClose={onClose} closeLabel="Close">
      <div class="start-form members-form">
        <ul class="member-list" aria-label="Members">
          {current.members.map((m) => (
            <li key={m.id} class="member-row">
              <span>
                {m.name} <span class="muted small">{kindLabel(m)}</span>
                {m.id === me?.id && <span class="muted small"> (you)</span>}
              </span>
              {me !== null &&
                m.id !== me.id &&
                (confirmRemove === m.name ? (
                  <span class="member-confirm">
                    <button
                      type="button"
                      class="button danger"
                      disabled={busy}
                      onClick={() => void remove(m.name)}
                    >
                      Yes, remove {m.name}
                    </button>
                    <button type="button" class="button ghost" onClick={() => setConfirmRemove(null)}>
                      Keep
                    </button>
                  </span>
                ) : (
                  <button
                    type="button"
                    class="button ghost"
                    disabled={busy}
                    aria-label={`Remove ${m.name}`}
                    onClick={() => setConfirmRemove(m.name)}
                  >
                    Remove
                  </button>
                ))}
            </li>
          ))}
        </ul>
        {current.memberCount > current.members.length && (
          <p class="muted small">and {current.memberCount - current.members.length} more</p>
        )}
        <p class="muted small">
          Any member may add; only the channel's creator may remove others. A person added by an agent is
          invited first.
        </p>
        <form
          class="member-add"
          onSubmit={(event) => {
            event.preventDefault();
            void add();
          }}
        >
          <h3 class="small-heading">Add a member</h3>
          {everyone === null && !error && <p class="muted">Looking up agents and people…</p>}
          {everyone !== null && candidates.length === 0 && (
            <p class="muted">Everyone on this host is already a member.</p>
          )}
          {candidates.length > 0 && (
            <span class="member-add-row">
              <label for="member-add-name" class="visually-hidden">
                Agent or person to add
              </label>
              <select
                id="member-add-name"
                value={toAdd}
                onChange={(event) => setToAdd(event.currentTarget.value)}
              >
                <option value="">Choose an agent or a person…</option>
                {candidates.map((p) => (
                  <option key={p.id} value={p.name}>
                    {p.name} ({kindLabel(p)})
                  </option>
                ))}
              </select>
              <button type="submit" class="button primary" disabled={busy || toAdd === ''}>
                Add
              </button>
            </span>
          )}
        </form>
        <p class="muted small" role="status" aria-live="polite">
          {note}
        </p>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </div>
    </Modal>
  );
}
