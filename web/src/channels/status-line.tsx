import type { MessageStatus, RecipientState, TimelineMessage } from '../wire.js';

/**
 * How each state reads under the person's own message. "Stored" says plainly that the agent has
 * not read it yet: a message that is only sent must never look delivered.
 */
export const STATE_LABELS: Record<RecipientState, string> = {
  stored: 'stored, not read yet',
  offered: 'offered',
  received: 'received whole',
  handled: 'handled',
  answered: 'answered',
  archived: 'archived',
  withdrawn: 'withdrawn',
  returned: 'returned',
};

/**
 * Where each agent's copy of the person's own message stands (`message.status`), updated live.
 * Until the first status arrives the agents are listed as "checking…", never with a guess.
 */
export function StatusLine({
  message,
  status,
}: {
  message: TimelineMessage;
  status: MessageStatus | undefined;
}) {
  const more =
    (status?.recipientCount ?? message.receiptCount) - (status?.recipients.length ?? message.receipts.length);
  return (
    <ul class="receipt-list" aria-label="Where your message stands with each agent">
      {status
        ? status.recipients.map((r) => (
            <li
              key={r.agent}
              class={`receipt state-${r.state}`}
              data-agent={r.agent}
              data-state={r.state}
              title={`since ${new Date(r.since).toLocaleString()}`}
            >
              <span class="receipt-agent">{r.agent}</span> {STATE_LABELS[r.state]}
              {r.reason && <span class="receipt-reason">: {r.reason}</span>}
            </li>
          ))
        : message.receipts.map((r) => (
            <li key={r.agent} class="receipt state-checking" data-agent={r.agent}>
              <span class="receipt-agent">{r.agent}</span> checking…
            </li>
          ))}
      {more > 0 && <li class="receipt">+{more} more</li>}
    </ul>
  );
}
