// Which approval cards the queue page keeps (web/src/queue/approval-settling.ts): a decision made
// elsewhere leaves the card, shown as decided, until its person dismisses it.
import { describe, expect, it } from 'vitest';
import {
  applyApprovalChange,
  asExpired,
  countByAgent,
  mergeListedApprovals,
  settledLabel,
} from '../../web/src/queue/approval-settling.js';
import type { Approval } from '../../web/src/wire.js';

const pending = (id: string): Approval => ({
  id,
  agent: 'helper',
  client: 'claude',
  kind: 'tool',
  subject: { tool: 'Bash' },
  turnId: null,
  status: 'pending',
  note: null,
  createdAt: 1,
  expiresAt: 1_000,
  decidedBy: null,
  decidedAt: null,
});
const decided = (id: string, status: 'allowed' | 'denied', by: string): Approval => ({
  ...pending(id),
  status,
  decidedBy: by,
  decidedAt: 500,
});

describe('approval cards as decisions arrive', () => {
  it('a decision by someone else keeps the card in place, shown as decided', () => {
    const cards = [pending('a'), pending('b')];
    const after = applyApprovalChange(cards, decided('a', 'denied', 'alice'), 'owner');
    expect(after.map((c) => [c.id, c.status])).toEqual([
      ['a', 'denied'],
      ['b', 'pending'],
    ]);
    expect(settledLabel(after[0] as Approval)).toBe('Denied by alice');
  });

  it('a decision by this person removes the card; one never shown adds nothing', () => {
    expect(applyApprovalChange([pending('a')], decided('a', 'allowed', 'owner'), 'owner')).toEqual([]);
    expect(applyApprovalChange([], decided('z', 'allowed', 'alice'), 'owner')).toEqual([]);
  });

  it('a re-read keeps the decided cards not yet dismissed and drops pending ones decided meanwhile', () => {
    const cards = [pending('a'), decided('b', 'allowed', 'alice'), pending('c')];
    const merged = mergeListedApprovals(cards, [pending('c'), pending('d')]);
    expect(merged.map((c) => c.id)).toEqual(['c', 'd', 'b']);
  });

  it('an expired request reads as expired, with who decided left empty', () => {
    const expired = asExpired(pending('a'));
    expect(expired.status).toBe('expired');
    expect(settledLabel(expired)).toBe('Expired: nobody answered in time, so it was denied');
    expect(settledLabel({ ...decided('q', 'allowed', 'bob'), kind: 'user_input' })).toBe('Answered by bob');
  });
});

describe('the sidebar’s count of requests waiting', () => {
  it('counts per agent only those whose time has not run out', () => {
    const pending = new Map([
      ['a', { agent: 'helper', expiresAt: 2_000 }],
      ['b', { agent: 'helper', expiresAt: 1_000 }],
      ['c', { agent: 'coder', expiresAt: 5_000 }],
    ]);
    expect(countByAgent(pending, 500)).toEqual(
      new Map([
        ['helper', 2],
        ['coder', 1],
      ]),
    );
    expect(countByAgent(pending, 1_000)).toEqual(
      new Map([
        ['helper', 1],
        ['coder', 1],
      ]),
    );
    expect(countByAgent(pending, 5_000)).toEqual(new Map());
  });
});
