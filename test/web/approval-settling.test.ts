// Which approval cards the queue page keeps (web/src/queue/approval-settling.ts): a decision made
// elsewhere leaves the card, shown as decided, until its person dismisses it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyApprovalChange,
  asExpired,
  countByAgent,
  isSettled,
  mergeListedApprovals,
  type ShownApproval,
  settledLabel,
  vanishedPending,
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

  it('a re-read keeps the decided cards not yet dismissed, with what is pending now', () => {
    const cards = [decided('b', 'allowed', 'alice'), pending('c')];
    const merged = mergeListedApprovals(cards, [pending('c'), pending('d')], 'owner');
    expect(merged.map((c) => c.id)).toEqual(['c', 'd', 'b']);
  });

  it('a card decided while the page was disconnected stays, as decided, until dismissed', () => {
    // Shown pending; bob denied it during a disconnect, so the re-listed pending set lacks it.
    const cards = [pending('a'), pending('c')];
    const listed = [pending('c')];
    expect(vanishedPending(cards, listed)).toEqual(['a']);
    const finals = new Map([['a', decided('a', 'denied', 'bob')]]);
    const merged = mergeListedApprovals(cards, listed, 'owner', finals);
    expect(merged.map((c) => [c.id, c.status])).toEqual([
      ['c', 'pending'],
      ['a', 'denied'],
    ]);
    expect(isSettled(merged[1] as ShownApproval)).toBe(true);
    expect(settledLabel(merged[1] as ShownApproval)).toBe('Denied by bob');
  });

  it('one decided meanwhile by this person goes; one whose outcome cannot be read says so', () => {
    const cards = [pending('a'), pending('b')];
    const finals = new Map([
      ['a', decided('a', 'allowed', 'owner')],
      ['b', null],
    ]);
    const merged = mergeListedApprovals(cards, [], 'owner', finals);
    expect(merged.map((c) => c.id)).toEqual(['b']);
    const unknown = merged[0] as ShownApproval;
    expect(isSettled(unknown)).toBe(true);
    expect(settledLabel(unknown)).toBe('Decided elsewhere while this page was disconnected');
    // A later push with the real outcome replaces it in place.
    const pushed = applyApprovalChange(merged, decided('b', 'denied', 'bob'), 'owner');
    expect(settledLabel(pushed[0] as ShownApproval)).toBe('Denied by bob');
    // Nothing asked about (a card pushed after the list was asked for) is left pending.
    expect(mergeListedApprovals([pending('n')], [], 'owner').map((c) => [c.id, c.status])).toEqual([
      ['n', 'pending'],
    ]);
  });

  it('never drops a card shown pending unless this person decided it', () => {
    const outcome = fc.constantFrom<'pending-now' | 'denied' | 'allowed-by-me' | 'unread' | 'not-asked'>(
      'pending-now',
      'denied',
      'allowed-by-me',
      'unread',
      'not-asked',
    );
    fc.assert(
      fc.property(fc.array(outcome, { maxLength: 8 }), (outcomes) => {
        const cards = outcomes.map((_, i) => pending(`r${i}`));
        const listed = cards.filter((_, i) => outcomes[i] === 'pending-now');
        const finals = new Map<string, Approval | null>();
        outcomes.forEach((o, i) => {
          if (o === 'denied') finals.set(`r${i}`, decided(`r${i}`, 'denied', 'bob'));
          if (o === 'allowed-by-me') finals.set(`r${i}`, decided(`r${i}`, 'allowed', 'owner'));
          if (o === 'unread') finals.set(`r${i}`, null);
        });
        const merged = mergeListedApprovals(cards, listed, 'owner', finals);
        const kept = new Set(merged.map((c) => c.id));
        expect(outcomes.map((_, i) => kept.has(`r${i}`))).toEqual(outcomes.map((o) => o !== 'allowed-by-me'));
        expect(new Set(vanishedPending(cards, listed))).toEqual(
          new Set(cards.filter((_, i) => outcomes[i] !== 'pending-now').map((c) => c.id)),
        );
      }),
    );
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
