import { useCallback, useEffect, useState } from 'preact/hooks';
import { useOnReconnect } from '../hooks.js';
import { formatBytes } from '../media.js';
import { describeError, type RpcClient, RpcError } from '../rpc.js';
import { shownExactly } from '../shown-text.js';
import { RelativeTime } from '../time.js';
import type { Approval } from '../wire.js';
import { AnswerForm, ApprovalQuestions } from './approval-questions.js';

/**
 * The agent's pending approval requests, for its owner and managers (docs/approvals.md): each one
 * shows exactly what the client asked, with Allow, Deny and Deny with a note. Read with
 * `approval.list` and kept live by `approval.changed` on the queue subscription the panel holds;
 * anyone the host refuses (not a manager) sees nothing here.
 */
export function ApprovalCards({ client, agent }: { client: RpcClient; agent: string }) {
  const [pending, setPending] = useState<Approval[]>([]);
  const [failed, setFailed] = useState<string | null>(null);
  const load = useCallback(() => {
    client
      .call<{ approvals: Approval[] }>('approval.list', { agent, status: 'pending' })
      .then((r) => {
        setFailed(null);
        setPending(r.approvals.filter((a) => a.status === 'pending'));
      })
      .catch((err) => {
        setPending([]);
        // Anyone the host refuses (not a manager) sees nothing, and a dropped connection reads
        // again on reconnect; any other failure is said rather than shown as "nothing pending".
        const refused =
          err instanceof RpcError && (err.data as { code?: string } | undefined)?.code === 'denied';
        setFailed(
          refused || !(err instanceof RpcError) || typeof err.code !== 'number' ? null : describeError(err),
        );
      });
  }, [client, agent]);
  useEffect(load, [load]);
  useOnReconnect(client, load);
  useEffect(() => {
    const off = client.on('approval.changed', (event) => {
      if (event.agent !== agent) return;
      setPending((current) => {
        const others = current.filter((a) => a.id !== event.approval.id);
        return event.approval.status === 'pending' ? [...others, event.approval] : others;
      });
    });
    // Pushes overflowed while the socket was backed up: read the list again.
    const offResync = client.on('approval.resync', load);
    return () => {
      off();
      offResync();
    };
  }, [client, agent, load]);
  if (failed !== null)
    return (
      <p class="error" role="alert">
        Could not read {agent}’s approval requests: {failed}
      </p>
    );
  if (pending.length === 0) return null;
  return (
    <section class="approvals" aria-label={`${agent} asks for permission`}>
      {pending.map((a) => (
        <ApprovalCard key={a.id} client={client} approval={a} />
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

function ApprovalCard({ client, approval }: { client: RpcClient; approval: Approval }) {
  const [noting, setNoting] = useState(false);
  const [note, setNote] = useState('');
  const [answer, setAnswer] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const decide = (decision: 'allow' | 'deny', withNote?: string) => {
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
        <span class="muted small">
          {' '}
          · denied by itself <RelativeTime iso={new Date(approval.expiresAt).toISOString()} due /> if nobody
          answers
        </span>
      </header>
      <Request approval={approval} onPick={setAnswer} />
      {noting ? (
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
