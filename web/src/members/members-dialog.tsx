// A group's members from its header: "Members (N)" opens a dialog listing them, with Remove next to
// each and an Add picker (any agent or person not yet in). The host decides who may do what
// (docs/security.md): any member may add (a person is only invited, unless the owner adds); only the
// channel's creator removes others. A refusal is shown as the host's one line, and nothing changed.

import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeError, type RpcClient } from '../rpc.js';
import { kindLabel, loadPrincipals, Modal } from '../start/start-dialogs.js';
import type { ChannelCreated, ChannelMembersPage, ChannelSummary, PrincipalRef } from '../wire.js';

/** Every member, walking `channel.members` pages; `onPage` sees the list grow (the count is the host's). */
async function loadMembers(
  client: RpcClient,
  channelId: string,
  onPage: (members: PrincipalRef[], memberCount: number) => void,
): Promise<PrincipalRef[]> {
  const all: PrincipalRef[] = [];
  let cursor: string | null = null;
  do {
    const page: ChannelMembersPage = await client.call<ChannelMembersPage>(
      'channel.members',
      cursor === null ? { channelId } : { channelId, cursor },
    );
    all.push(...page.members);
    onPage([...all], page.memberCount);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return all;
}

interface MembersProps {
  client: RpcClient;
  channel: ChannelSummary;
  me: PrincipalRef;
}

/** The header button; the count is the host's `memberCount`. */
export function MembersButton({ client, channel, me }: MembersProps) {
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
      {open && <MembersDialog client={client} channel={channel} me={me} onClose={() => setOpen(false)} />}
    </>
  );
}

/**
 * Lists every member: `channel.members` pages are walked to the end (the channel's list row holds
 * only the first 50), so the Add picker never offers someone already in. Channels are not re-listed.
 */
function MembersDialog({ client, channel, me, onClose }: MembersProps & { onClose: () => void }) {
  const [members, setMembers] = useState<PrincipalRef[]>(channel.members);
  const [memberCount, setMemberCount] = useState(channel.memberCount);
  const [complete, setComplete] = useState(false);
  const [everyone, setEveryone] = useState<PrincipalRef[] | null>(null);
  const [toAdd, setToAdd] = useState('');
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [confirmRemove, setConfirmRemove] = useState<string | null>(null);
  // Only the newest walk may show its pages: an add or remove starts a new one.
  const walk = useRef(0);
  // The first walk shows its pages as they come; a later one replaces the whole list at its end
  // (no shrinking back to one page after every add or remove).
  const shownAll = useRef(false);

  const reload = useCallback(async () => {
    const round = ++walk.current;
    setComplete(false);
    try {
      const all = await loadMembers(client, channel.id, (sofar, count) => {
        if (walk.current !== round) return;
        setMemberCount(count);
        if (!shownAll.current) setMembers(sofar);
      });
      if (walk.current !== round) return;
      setMembers(all);
      setComplete(true);
      shownAll.current = true;
    } catch (err) {
      if (walk.current === round) setError(`could not list the members: ${describeError(err)}`);
    }
  }, [client, channel.id]);
  useEffect(() => {
    let live = true;
    loadPrincipals(client)
      .then((all) => live && setEveryone(all))
      .catch((err) => live && setError(`could not list agents and people: ${describeError(err)}`));
    void reload();
    return () => {
      live = false;
      walk.current += 1;
    };
  }, [client, reload]);

  const memberNames = new Set(members.map((m) => m.name));
  // Until every page is in, someone not listed yet may already be a member: offer nobody.
  const candidates = complete ? (everyone ?? []).filter((p) => !memberNames.has(p.name)) : [];
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
      setToAdd('');
      // Announced with the list that shows it: the note and the usable controls come in one render.
      await reload();
      setNote(
        change.invited.length > 0
          ? `${change.invited.join(', ')} invited: they join when they accept.`
          : `${toAdd} added.`,
      );
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
      setConfirmRemove(null);
      await reload();
      setNote(`${name} removed.`);
    } catch (err) {
      setError(`${name} not removed: ${describeError(err)}`);
      setConfirmRemove(null);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal title={`Members of #${channel.name}`} titleId="members-title" onClose={onClose} closeLabel="Close">
      <div class="start-form members-form">
        <ul class="member-list" aria-label="Members">
          {members.map((m) => (
            <li key={m.id} class="member-row">
              <span>
                {m.name} <span class="muted small">{kindLabel(m)}</span>
                {m.id === me.id && <span class="muted small"> (you)</span>}
              </span>
              {m.id !== me.id &&
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
        {!complete && !error && (
          <p class="muted small" data-testid="members-loading">
            Loading members… ({members.length} of {memberCount})
          </p>
        )}
        <p class="muted small">
          Any member may add; only the channel's creator may remove others. A person is invited and joins when
          they accept (the owner's additions join at once); an agent only its managers add.
        </p>
        <form
          class="member-add"
          onSubmit={(event) => {
            event.preventDefault();
            void add();
          }}
        >
          <h3 class="small-heading">Add a member</h3>
          {(everyone === null || !complete) && !error && <p class="muted">Looking up agents and people…</p>}
          {everyone !== null && complete && candidates.length === 0 && (
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
