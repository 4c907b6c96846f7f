import type { ClientTurn } from '../../host/turns/index.js';
import type { ApprovalReporter } from './approvals.js';

/**
 * Passes approval events on to `report`, and tells the turn that was running when a person was
 * asked that it waits on them, until the answer reached the client (host/turns: TurnSession's
 * `waiting` phase). A wait the driver stops before the answer ends with its turn.
 */
export function reportingPersonWaits(
  runningTurn: () => ClientTurn | undefined,
  report: ApprovalReporter | undefined,
): ApprovalReporter {
  const askedBy = new Map<string, ClientTurn>();
  return (event) => {
    const id = event.approvalId;
    if (id !== null && event.phase === 'waiting') {
      const turn = runningTurn();
      if (turn) {
        askedBy.set(id, turn);
        turn.waitOnPerson(id);
      }
    } else if (id !== null) {
      askedBy.get(id)?.personAnswered(id);
      askedBy.delete(id);
    }
    report?.(event);
  };
}
