// Starting things from the page: "New message" (a DM with any agent or person, created by the first
// message, as `message.send {to: name}` does) and "New channel" (a group with chosen members).
// Both are modal <dialog>s; the names come from `principal.list`.

import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ConnectPanel } from '../agents/connect-panel.js';
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
  const [round, setRound] = useState(0);
  useEffect(() => {
    let live = true;
    loadPrincipals(client)
      .then((all) => live && setOthers(all.filter((p) => p.id !== me.id)))
      .catch((err) => live && setError(`could not list agents and people: ${describeError(err)}`));
    return () => {
      live = false;
    };
  }, [client, me.id, round]);
  return { others, error, reload: () => setRound((n) => n + 1) };
}

/**
 * "New agent…": a name and how its turns settle. Shown only when the host's hello says
 * `canAddAgent` (the page does not restate who may); `principal.addAgent` refuses anyone else
 * anyway. Calls `onAdded` with the new name once the host has it.
 */
function NewAgentForm({ client, onAdded }: { client: RpcClient; onAdded: (name: string) => void }) {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [settlement, setSettlement] = useState<'explicit' | 'turn'>('explicit');
  const [adding, setAdding] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [added, setAdded] = useState<string | null>(null);
  const toggle = useRef<HTMLButtonElement>(null);
  const refocus = useRef(false);
  // The form (and its focused "Add agent" button) goes away once the agent is added: keep focus in
  // the dialog, on the button that opens the form again.
  useEffect(() => {
    if (!open && refocus.current) {
      refocus.current = false;
      toggle.current?.focus();
    }
  }, [open]);
  // Always in the page, so a screen reader announces the line when it fills in.
  const status = (
    <>
      <p class="muted small new-agent-status" role="status">
        {added && `Added agent ${added}; it is selected in To.`}
      </p>
      {added && <ConnectPanel client={client} agent={added} />}
    </>
  );
  if (!open)
    return (
      <>
        <button
          type="button"
          ref={toggle}
          class="button new-agent-toggle"
          onClick={() => {
            setAdded(null);
            setOpen(true);
          }}
        >
          New agent…
        </button>
        {status}
      </>
    );
  const close = () => {
    refocus.current = true;
    setOpen(false);
  };
  const add = async () => {
    const clean = name.trim();
    if (clean === '' || adding) return;
    setAdding(true);
    setError(null);
    try {
      await client.call('principal.addAgent', { name: clean, settlement });
      close();
      setName('');
      setAdded(clean);
      onAdded(clean);
    } catch (err) {
      setError(`not added: ${describeError(err)}`);
    } finally {
      setAdding(false);
    }
  };
  return (
    <>
      <fieldset class="new-agent">
        <legend>New agent</legend>
        <label for="new-agent-name">Agent name</label>
        <input
          id="new-agent-name"
          type="text"
          autoComplete="off"
          placeholder="e.g. helper"
          value={name}
          onInput={(event) => setName(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter') {
              event.preventDefault();
              void add();
            }
          }}
        />
        <span class="settlement-choice" role="radiogroup" aria-label="How its messages are settled">
          <label class="member-option">
            <input
              type="radio"
              name="new-agent-settlement"
              checked={settlement === 'explicit'}
              onChange={() => setSettlement('explicit')}
            />
            explicit <span class="muted small">(the agent archives what it handled)</span>
          </label>
          <label class="member-option">
            <input
              type="radio"
              name="new-agent-settlement"
              checked={settlement === 'turn'}
              onChange={() => setSettlement('turn')}
            />
            turn <span class="muted small">(settled by its turns, for sluice drive)</span>
          </label>
        </span>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <span class="start-actions">
          <button
            type="button"
            class="button primary"
            disabled={adding || name.trim() === ''}
            onClick={() => void add()}
          >
            {adding ? 'Adding…' : 'Add agent'}
          </button>
          <button type="button" class="button ghost" onClick={close}>
            Cancel
          </button>
        </span>
      </fieldset>
      {status}
    </>
  );
}

interface ModalProps {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  /** Id of the title element (unique per kind of dialog). */
  titleId?: string;
  closeLabel?: string;
}

/** A modal dialog that opens itself, closes on Escape, and returns focus where it was. */
export function Modal({
  title,
  onClose,
  children,
  titleId = 'start-title',
  closeLabel = 'Cancel',
}: ModalProps) {
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
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      <header class="reader-header">
        <h2 id={titleId}>{title}</h2>
        <button type="button" class="button ghost" onClick={onClose}>
          {closeLabel}
        </button>
      </header>
      {children}
    </dialog>
  );
}

export const kindLabel = (p: PrincipalRef) => (p.kind === 'agent' ? 'agent' : 'person');

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
  canAddAgent,
}: StartProps & { initialTo?: string; canAddAgent: boolean }) {
  const { others, error: listError, reload } = usePrincipals(client, me);
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
            Nobody else is on this host yet.{' '}
            {canAddAgent ? (
              'Press New agent to add one.'
            ) : (
              <>
                The owner adds agents (<code>sluice agent add NAME</code>).
              </>
            )}
          </p>
        )}
        {canAddAgent && (
          <NewAgentForm
            client={client}
            onAdded={(name) => {
              setTo(name);
              reload();
            }}
          />
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

/** "New channel": a name and any members; agents join, people are invited (the owner's join). */
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
