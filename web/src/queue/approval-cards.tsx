import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { useOnReconnect } from '../hooks.js';
import { formatBytes } from '../media.js';
import { describeError, type RpcClient, RpcError } from '../rpc.js';
import { shownExactly, shownText } from '../shown-text.js';
import { RelativeTime } from '../time.js';
import type { Approval } from '../wire.js';
import { AnswerForm, ApprovalQuestions } from './approval-questions.js';
import {
  applyApprovalChange,
  asExpired,
  isSettled,
  mergeListedApprovals,
  type ShownApproval,
  settledLabel,
  vanishedPending,
} from './approval-settling.js';

/**
 * The agent's pending approval requests, for its owner and managers (docs/approvals.md): each one
 * shows exactly what the client asked, with Allow, Deny and Deny with a note. Read with
 * `approval.list` and kept live by `approval.changed` on the queue subscription the panel holds;
 * anyone the host refuses (not a manager) sees nothing here. A request decided by someone else or
 * by the timeout stays as a decided card until `me` dismisses it (approval-settling.ts).
 */
export function ApprovalCards({ client, agent, me }: { client: RpcClient; agent: string; me: string }) {
  const [cards, setCards] = useState<ShownApproval[]>([]);
  const [failed, setFailed] = useState<string | null>(null);
  // The cards as last rendered: which ones shown pending a fresh list no longer holds.
  const shownCards = useRef(cards);
  shownCards.current = cards;
  const load = useCallback(() => {
    const list = (status: 'pending' | 'all') =>
      client.call<{ approvals: Approval[] }>('approval.list', { agent, status }).then((r) => r.approvals);
    list('pending')
      .then(async (listed) => {
        // Cards decided while the page was not hearing pushes: read how, so they stay as decided.
        const vanished = vanishedPending(shownCards.current, listed);
        const finals = new Map<string, Approval | null>();
        if (vanished.length > 0) {
          const all = await list('all').catch(() => []);
          for (const id of vanished) finals.set(id, all.find((a) => a.id === id) ?? null);
        }
        setFailed(null);
        setCards((current) => mergeListedApprovals(current, listed, me, finals));
      })
      .catch((err) => {
        // Anyone the host refuses (not a manager) sees nothing, and a dropped connection reads
        // again on reconnect (the cards kept, so one decided meanwhile is still found); any other
        // failure is said rather than shown as "nothing pending".
        const refused =
          err instanceof RpcError && (err.data as { code?: string } | undefined)?.code === 'denied';
        if (refused) setCards([]);
        setFailed(
          refused || !(err instanceof RpcError) || typeof err.code !== 'number' ? null : describeError(err),
        );
      });
  }, [client, agent, me]);
  useEffect(load, [load]);
  useOnReconnect(client, load);
  useEffect(() => {
    const off = client.on('approval.changed', (event) => {
      if (event.agent !== agent) return;
      setCards((current) => applyApprovalChange(current, event.approval, me));
    });
    // Pushes overflowed while the socket was backed up: read the list again.
    const offResync = client.on('approval.resync', load);
    return () => {
      off();
      offResync();
    };
  }, [client, agent, me, load]);
  if (failed !== null)
    return (
      <p class="error" role="alert">
        Could not read {agent}’s approval requests: {failed}
      </p>
    );
  if (cards.length === 0) return null;
  const dismiss = (id: string) => setCards((current) => current.filter((a) => a.id !== id));
  return (
    <section class="approvals" aria-label={`${agent} asks for permission`}>
      {cards.map((a) => (
        <ApprovalCard key={a.id} client={client} approval={a} onDismiss={() => dismiss(a.id)} />
      ))}
    </section>
  );
}

// Every character that acts instead of showing is written as `\u202e` (shown-text.ts, the host's
// own rule): a bidi override in a command would otherwise reorder what a person reads before
// allowing it.
const shown = shownExactly;

/**
 * What the client asked, exactly: the tool and its input JSON, the command and cwd, the diff, the
 * questions (an option pressed becomes the answer).
 */
function Request({ approval, onPick }: { approval: Approval; onPick: (label: string) => void }) {
  const s = approval.subject;
  return (
    <div class="approval-request">
      {s.tool !== undefined && (
        <p>
          Tool <code>{shown(s.tool)}</code>
        </p>
      )}
      {s.input !== undefined && <pre class="approval-input">{shown(JSON.stringify(s.input, null, 2))}</pre>}
      {s.command !== undefined && <pre class="approval-command">{shown(s.command)}</pre>}
      {s.cwd !== undefined && (
        <p>
          in <code>{shown(s.cwd)}</code>
        </p>
      )}
      {s.diff !== undefined && <pre class="approval-diff">{shown(s.diff)}</pre>}
      {s.questions !== undefined && <ApprovalQuestions questions={s.questions} onPick={onPick} />}
      {s.reason !== undefined && <p class="muted">The model says: {shown(s.reason)}</p>}
      {approval.subjectCut !== undefined && (
        <p class="muted small approval-cut">
          Shown cut: the whole request is {formatBytes(approval.subjectCut.bytes)}. See all of it with{' '}
          <code>sluice approval show {approval.id}</code>.
        </p>
      )}
    </div>
  );
}

/** True from the moment `expiresAt` (ms since the epoch) has passed: re-renders then, once. */
function useExpired(expiresAt: number): boolean {
  const [expired, setExpired] = useState(() => Date.now() >= expiresAt);
  useEffect(() => {
    if (expired) return;
    // setTimeout holds at most 2^31-1 ms; a longer wait re-arms when the card renders again.
    const timer = setTimeout(
      () => setExpired(Date.now() >= expiresAt),
      Math.min(expiresAt - Date.now(), 2 ** 31 - 1),
    );
    return () => clearTimeout(timer);
  }, [expiresAt, expired]);
  return expired;
}

function ApprovalCard({
  client,
  approval: shown,
  onDismiss,
}: {
  client: RpcClient;
  approval: ShownApproval;
  onDismiss: () => void;
}) {
  const [noting, setNoting] = useState(false);
  const [note, setNote] = useState('');
  const [answer, setAnswer] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // Its time ran out and no driver denied it (the driver is gone): nothing left to decide.
  const timedOut = useExpired(shown.expiresAt);
  // One decided elsewhere while the page was disconnected is not re-labelled as expired.
  const approval = shown.status === 'pending' && timedOut && !shown.decidedUnseen ? asExpired(shown) : shown;
  const settled = isSettled(approval);
  // The person pressed a decision here: once the card is decided, focus goes to Dismiss (the
  // button they pressed is gone).
  const acted = useRef(false);
  const dismissButton = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (settled && acted.current) dismissButton.current?.focus();
  }, [settled]);
  const decide = (decision: 'allow' | 'deny', withNote?: string) => {
    acted.current = true;
    setBusy(true);
    setError(null);
    client
      .call('approval.decide', { id: approval.id, decision, ...(withNote ? { note: withNote } : {}) })
      .catch((err) => setError(describeError(err)))
      .finally(() => setBusy(false));
  };
  const heading =
    approval.kind === 'user_input'
      ? `${approval.agent} asks you a question`
      : `${approval.agent} asks to ${
          approval.kind === 'tool'
            ? 'use a tool'
            : approval.kind === 'command'
              ? 'run a command'
              : 'change files'
        }`;
  return (
    <article class="approval-card" data-approval-id={approval.id} aria-label={heading}>
      <header>
        <strong>{heading}</strong> <RelativeTime iso={new Date(approval.createdAt).toISOString()} />
        {settled ? (
          <p class="approval-settled">
            <strong>{settledLabel(approval)}</strong>{' '}
            {approval.decidedAt !== null && <RelativeTime iso={new Date(approval.decidedAt).toISOString()} />}
          </p>
        ) : (
          <span class="muted small">
            {' '}
            · denied by itself <RelativeTime iso={new Date(approval.expiresAt).toISOString()} due /> if nobody
            answers
          </span>
        )}
      </header>
      <Request approval={approval} onPick={setAnswer} />
      {settled ? (
        <>
          {approval.note !== null && approval.status !== 'expired' && (
            <p class="muted">
              {approval.kind === 'user_input' && approval.status === 'allowed' ? 'Answer' : 'Note'}:{' '}
              {shownText(approval.note)}
            </p>
          )}
          <div class="banner-actions">
            <button type="button" class="button" ref={dismissButton} onClick={onDismiss}>
              Dismiss
            </button>
          </div>
        </>
      ) : noting ? (
        <form
          class="approval-note"
          onSubmit={(e) => {
            e.preventDefault();
            decide('deny', note);
          }}
        >
          <label>
            Note for the model
            <textarea value={note} maxLength={2000} onInput={(e) => setNote(e.currentTarget.value)} />
          </label>
          <div class="banner-actions">
            <button type="submit" class="button" disabled={busy || note.trim() === ''}>
              Deny with this note
            </button>
            <button type="button" class="button ghost" onClick={() => setNoting(false)}>
              Cancel
            </button>
          </div>
        </form>
      ) : approval.kind === 'user_input' ? (
        <AnswerForm
          answer={answer}
          setAnswer={setAnswer}
          busy={busy}
          onAnswer={(text) => decide('allow', text)}
          onDeny={() => decide('deny')}
          onDenyWithNote={() => setNoting(true)}
        />
      ) : (
        <div class="banner-actions">
          <button type="button" class="button primary" disabled={busy} onClick={() => decide('allow')}>
            Allow
          </button>
          <button type="button" class="button" disabled={busy} onClick={() => decide('deny')}>
            Deny
          </button>
          <button type="button" class="button" disabled={busy} onClick={() => setNoting(true)}>
            Deny with a note…
          </button>
        </div>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </article>
  );
}
