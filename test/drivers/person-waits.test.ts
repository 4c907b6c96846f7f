// The drivers tell the turn that was running when a person was asked that it waits on them, and
// that turn — not whichever runs when the answer comes — when the answer reached the client.
import { describe, expect, test } from 'vitest';
import type { ApprovalAsk } from '../../src/host/approvals/subject.js';
import type { ClientTurn } from '../../src/host/turns/index.js';
import type { ApprovalEvent } from '../../src/surfaces/drivers/approvals.js';
import { reportingPersonWaits } from '../../src/surfaces/drivers/person-waits.js';

/** A turn that records its waits. */
function recordingTurn(id: string): ClientTurn & { waits: string[] } {
  const waits = new Set<string>();
  return {
    id,
    saw: () => {},
    waitOnPerson: (approvalId) => waits.add(approvalId),
    personAnswered: (approvalId) => waits.delete(approvalId),
    get waits() {
      return [...waits];
    },
  };
}

const ask: ApprovalAsk = {
  client: 'codex',
  kind: 'command',
  subject: { command: 'ls', cwd: '/' },
  turnId: 't1',
};
const answer = { decision: 'allow' as const, note: null, by: 'person' as const };

describe('reportingPersonWaits', () => {
  test('marks the asking turn waiting until its answer, and passes every event on', () => {
    const first = recordingTurn('t1');
    const second = recordingTurn('t2');
    let running: ClientTurn | undefined = first;
    const seen: ApprovalEvent[] = [];
    const report = reportingPersonWaits(
      () => running,
      (e) => seen.push(e),
    );
    report({ phase: 'waiting', ask, approvalId: 'apr_1' });
    expect(first.waits).toEqual(['apr_1']);
    running = second;
    report({ phase: 'answered', ask, approvalId: 'apr_1', answer: { ...answer, approvalId: 'apr_1' } });
    expect(first.waits).toEqual([]);
    expect(second.waits).toEqual([]);
    // Answered by a rule or the policy: nobody was asked, nothing waited.
    report({ phase: 'answered', ask, approvalId: null, answer: { ...answer, approvalId: null, by: 'rule' } });
    running = undefined;
    report({ phase: 'waiting', ask, approvalId: 'apr_2' });
    expect(seen.map((e) => [e.phase, e.approvalId])).toEqual([
      ['waiting', 'apr_1'],
      ['answered', 'apr_1'],
      ['answered', null],
      ['waiting', 'apr_2'],
    ]);
  });
});
