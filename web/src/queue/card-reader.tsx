import { useEffect, useRef, useState } from 'preact/hooks';
import { formatBytes } from '../media.js';
import { readWholeCard, type WholeText } from '../read-parts.js';
import { describeError, type RpcClient } from '../rpc.js';
import { shownText } from '../shown-text.js';
import type { QueuePageReply, QueueRow } from '../wire.js';

interface CardReaderProps {
  client: RpcClient;
  agent: string;
  messageId: string;
  /** What the header says: who sent it, when the list knows. */
  title: string;
  /** Whether the card was returned by a failed turn (only then is Resume offered). */
  returned: boolean;
  onClose: () => void;
  /** Runs a queue method for this agent; resolves true when it succeeded. */
  onAction: (method: string, params: Record<string, unknown>) => Promise<boolean>;
}

/** Why a returned card came back: the host's reason, else the failure kind. */
function returnedWhy(row: QueueRow | undefined): string | null {
  if (row?.state !== 'returned') return null;
  return row.returnedReason ?? (row.returnedFailure ? `the turn failed (${row.returnedFailure.kind})` : null);
}

const GONE_TEXT: Record<Exclude<WholeText['status'], 'body'>, string> = {
  gone: 'This message is no longer in the queue.',
  'handed-off': 'The agent has already taken this message.',
  'state-changed': 'This message changed while it was being read. Close and open it again.',
};

/** The full text of one card, read in parts, with edit / withdraw / resume. A modal dialog. */
export function CardReader({
  client,
  agent,
  messageId,
  title,
  returned,
  onClose,
  onAction,
}: CardReaderProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [card, setCard] = useState<WholeText | null>(null);
  const [progress, setProgress] = useState({ units: 0, parts: 0 });
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [reloads, setReloads] = useState(0);
  const [confirmingWithdraw, setConfirmingWithdraw] = useState(false);
  // The returned reason comes with the card's row: read that one row (the banner has only the id).
  const [reason, setReason] = useState<string | null>(null);
  useEffect(() => {
    if (!returned) return;
    let live = true;
    client
      .call<QueuePageReply>('queue.page', { agent, around: messageId, size: 1 })
      .then((page) => {
        if (live && page.status === 'page')
          setReason(returnedWhy(page.rows.find((r) => r.messageId === messageId)));
      })
      .catch(() => undefined);
    return () => {
      live = false;
    };
  }, [client, agent, messageId, returned]);

  useEffect(() => {
    const el = dialog.current;
    if (el && !el.open) el.showModal();
  }, []);

  useEffect(() => {
    let cancelled = false;
    setCard(null);
    setProgress({ units: 0, parts: 0 });
    readWholeCard(
      (method, params) => client.call(method, params),
      agent,
      messageId,
      (units, parts) => {
        if (!cancelled) setProgress({ units, parts });
      },
    )
      .then((result) => {
        if (!cancelled) setCard(result);
      })
      .catch((err) => {
        if (!cancelled) setError(`could not read the message: ${describeError(err)}`);
      });
    return () => {
      cancelled = true;
    };
  }, [client, agent, messageId, reloads]);

  const run = async (method: string, params: Record<string, unknown>, close: boolean) => {
    if (await onAction(method, { messageId, ...params })) {
      if (close) onClose();
      else setReloads((n) => n + 1);
      return true;
    }
    return false;
  };

  return (
    <dialog
      ref={dialog}
      class="reader"
      aria-labelledby="reader-title"
      onClose={onClose}
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      <header class="reader-header">
        <h2 id="reader-title" title={messageId}>
          {title}
        </h2>
        <button type="button" class="button ghost" onClick={onClose}>
          Close
        </button>
      </header>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {!card && !error && (
        <p class="muted pad" aria-live="polite">
          Reading…{' '}
          {progress.parts > 0 && `${progress.parts} part(s), ${progress.units.toLocaleString()} characters`}
        </p>
      )}
      {returned && (
        <p class="returned-reason" data-testid="returned-reason">
          <strong>Returned:</strong> {reason ?? 'the turn that carried it did not finish.'}
        </p>
      )}
      {card && card.status !== 'body' && <p class="muted pad">{GONE_TEXT[card.status]}</p>}
      {card?.status === 'body' && editing === null && (
        <>
          <p class="muted small reader-info" data-testid="reader-info">
            {formatBytes(card.bodyBytes)} · {card.text.length.toLocaleString()} characters · read in{' '}
            {card.parts} part{card.parts === 1 ? '' : 's'}
          </p>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a long scrollable text must be reachable by keyboard to scroll */}
          <pre class="reader-body" data-testid="reader-body" tabIndex={0}>
            {shownText(card.text)}
          </pre>
        </>
      )}
      {card?.status === 'body' && editing !== null && (
        <form
          class="reader-edit"
          onSubmit={(event) => {
            event.preventDefault();
            void run('queue.edit', { body: editing }, false).then((ok) => ok && setEditing(null));
          }}
        >
          <label for="reader-edit-text">Edit the message text</label>
          <textarea
            id="reader-edit-text"
            value={editing}
            onInput={(e) => setEditing(e.currentTarget.value)}
          />
          <div class="reader-actions">
            <button type="button" class="button" onClick={() => setEditing(null)}>
              Cancel
            </button>
            <button type="submit" class="button primary">
              Save
            </button>
          </div>
        </form>
      )}
      {card?.status === 'body' && editing === null && (
        <div class="reader-actions">
          <button type="button" class="button" onClick={() => setEditing(card.text)}>
            Edit
          </button>
          {confirmingWithdraw ? (
            <>
              <span class="confirm-text">Withdraw it? {agent} will not receive it.</span>
              <button type="button" class="button" onClick={() => setConfirmingWithdraw(false)}>
                Keep it
              </button>
              <button
                type="button"
                class="button danger"
                onClick={() => void run('queue.withdraw', {}, true)}
              >
                Yes, withdraw
              </button>
            </>
          ) : (
            <button type="button" class="button danger" onClick={() => setConfirmingWithdraw(true)}>
              Withdraw
            </button>
          )}
          {returned && (
            <button type="button" class="button primary" onClick={() => void run('queue.resume', {}, true)}>
              Resume
            </button>
          )}
        </div>
      )}
    </dialog>
  );
}
