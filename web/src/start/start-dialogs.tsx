// Starting things from the page: "New message" (a DM with any agent or person, created by the first
// message, as `message.send {to: name}` does) and "New channel" (a group with chosen members).
// Both are modal <dialog>s; the names come from `principal.list`.

import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError, type RpcClient } from '../rpc.js';
import type { ChannelCreated, PrincipalListPage, PrincipalRef, SentReply } from '../wire.js';

/** Every principal, walking `principal.list` pages (a host has dozens, not millions). */
export async function loadPrincipals(client: RpcClient): Promise<PrincipalRef[]> {
  const all: PrincipalRef[] = [];
  let after: string | null = null;
  do {
    const page: PrincipalListPage = await client.call<PrincipalListPage>(
      'principal.list',
      after === null ? {} : { after },
    );
    all.push(...page.principals);
    after = page.nextAfter;
  } while (after !== null);
  return all;
}

/** The principals other than me, or a message saying why there are none yet. */
function usePrincipals(client: RpcClient, me: PrincipalRef) {
  const [others, setOthers] = useState<PrincipalRef[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    loadPrincipals(client)
      .then((all) => live && setOthers(all.filter((p) => p.id !== me.id)))
      .catch((err) => live && setError(`could not list agents and people: ${describeError(err)}`));
    return () => {
      live = false;
    };
  }, [client, me.id]);
  return { others, error };
}

interface ModalProps {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
}

/** A modal dialog that opens itself, closes on Escape, and returns focus where it was. */
function Modal({ title, onClose, children }: ModalProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    const el = dialog.current;
    if (el && !el.open) el.showModal();
    return () => before?.focus();
  }, []);
  return (
    <dialog
      ref={dialog}
      class="reader start-dialog"
      aria-labelledby="start-title"
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      <header class="reader-header">
        <h2 id="start-title">{title}</h2>
        <button type="button" class="button ghost" onClick={onClose}>
          Cancel
        </button>
      </header>
      {children}
    </dialog>
  );
}

const kindLabel = (p: PrincipalRef) => (p.kind === 'agent' ? 'agent' : 'person');

interface StartProps {
  client: RpcClient;
  me: PrincipalRef;
  onClose: () => void;
  /** Called with the channel the action made or used, after it exists on the host. */
  onDone: (channelId: string) => void;
}

/** "New message": pick anyone, write the first message; the DM appears and opens. */
export function NewMessageDialog({
  client,
  me,
  onClose,
  onDone,
  initialTo = '',
}: StartProps & { initialTo?: string }) {
  const { others, error: listError } = usePrincipals(client, me);
  const [to, setTo] = useState(initialTo);
  const [body, setBody] = useState('');
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const canSend = !sending && to !== '' && body.trim() !== '';
  const send = async () => {
    if (!canSend) return;
    setSending(true);
    setError(null);
    try {
      const reply = await client.call<SentReply>('message.send', { to, body });
      onDone(reply.channel_id);
    } catch (err) {
      setError(`not sent: ${describeError(err)}`);
      setSending(false);
    }
  };
  return (
    <Modal title="New message" onClose={onClose}>
      <form
        class="start-form"
        onSubmit={(event) => {
          event.preventDefault();
          void send();
        }}
      >
        {listError && (
          <p class="error" role="alert">
            {listError}. Close this and try again.
          </p>
        )}
        {others === null && !listError && <p class="muted">Looking up agents and people…</p>}
        {others?.length === 0 && (
          <p class="muted">
            Nobody else is on this host yet. Add an agent with <code>sluice agent add NAME</code>.
          </p>
        )}
        {others && others.length > 0 && (
          <>
            <label for="new-message-to">To</label>
            <select id="new-message-to" value={to} onChange={(event) => setTo(event.currentTarget.value)}>
              <option value="">Choose an agent or a person…</option>
              {others.map((p) => (
                <option key={p.id} value={p.name}>
                  {p.name} ({kindLabel(p)})
                </option>
              ))}
            </select>
            <label for="new-message-body">Message</label>
            <textarea
              id="new-message-body"
              rows={4}
              value={body}
              onInput={(event) => setBody(event.currentTarget.value)}
            />
            {error && (
              <p class="error" role="alert">
                {error}
              </p>
            )}
            <div class="start-actions">
              <button type="submit" class="button primary" disabled={!canSend}>
                {sending ? 'Sending…' : 'Send'}
              </button>
            </div>
          </>
        )}
      </form>
    </Modal>
  );
}

/** "New channel": a name and any members; people an agent names are invited, others join. */
export function NewChannelDialog({ client, me, onClose, onDone }: StartProps) {
  const { others, error: listError } = usePrincipals(client, me);
  const [name, setName] = useState('');
  const [members, setMembers] = useState<ReadonlySet<string>>(new Set());
  const [creating, setCreating] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const cleanName = name.trim().replace(/^#/, '');
  const canCreate = !creating && cleanName !== '';
  const toggle = (member: string, on: boolean) =>
    setMembers((current) => {
      const next = new Set(current);
      if (on) next.add(member);
      else next.delete(member);
      return next;
    });
  const create = async () => {
    if (!canCreate) return;
    setCreating(true);
    setError(null);
    try {
      const reply = await client.call<ChannelCreated>('channel.create', {
        name: cleanName,
        members: [...members],
      });
      onDone(reply.id);
    } catch (err) {
      setError(`not created: ${describeError(err)}`);
      setCreating(false);
    }
  };
  return (
    <Modal title="New channel" onClose={onClose}>
      <form
        class="start-form"
        onSubmit={(event) => {
          event.preventDefault();
          void create();
        }}
      >
        <label for="new-channel-name">Channel name</label>
        <input
          id="new-channel-name"
          type="text"
          autoComplete="off"
          placeholder="e.g. release-notes"
          value={name}
          onInput={(event) => setName(event.currentTarget.value)}
        />
        <fieldset class="member-picker">
          <legend>Members</legend>
          {listError && (
            <p class="error" role="alert">
              {listError}. You can still create the channel and add members later.
            </p>
          )}
          {others === null && !listError && <p class="muted">Looking up agents and people…</p>}
          {others?.length === 0 && (
            <p class="muted">Nobody else is on this host yet; the channel starts with you.</p>
          )}
          {others?.map((p) => (
            <label key={p.id} class="member-option">
              <input
                type="checkbox"
                checked={members.has(p.name)}
                onChange={(event) => toggle(p.name, event.currentTarget.checked)}
              />
              {p.name} <span class="muted small">{kindLabel(p)}</span>
            </label>
          ))}
        </fieldset>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <div class="start-actions">
          <button type="submit" class="button primary" disabled={!canCreate}>
            {creating ? 'Creating…' : 'Create channel'}
          </button>
        </div>
      </form>
    </Modal>
  );
}
