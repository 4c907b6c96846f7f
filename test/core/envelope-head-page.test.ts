import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type DeliveryCandidate, renderDelivery } from '../../src/core/envelope.js';
import { utf8Length } from '../../src/core/measure.js';
import { CLAUDE_MAX_BYTES, CODEX_MAX_BYTES, defaultPageBytes } from '../../src/core/output-cap.js';
import { readBudgetFor } from '../../src/surfaces/cli/bounded-read.js';
import { boundedMessagePage } from '../../src/surfaces/cli/message-page.js';
import { HOOK_LIMITS } from '../../src/surfaces/hooks/adapters.js';
import { hostilePiece, hostileString } from './arbitraries.js';

// Issue 26 item 2: an oldest message over the hook's cap makes the envelope name the listing (the
// head and what follows, FIFO): one page when the head fits one, else pages that carry it in
// parts. Only an envelope that knows no client page (the provider-neutral one) reads it in parts.

const ID = '01KBC0000000000000000000HD';

function head(body: string, extra: Partial<DeliveryCandidate> = {}): DeliveryCandidate {
  return {
    id: ID,
    channel: 'dm:alice,bot',
    from: 'alice',
    sender: 'manager',
    createdAt: '2026-12-01T00:00:00.000Z',
    subject: null,
    replyTo: null,
    body,
    attachments: [],
    ...extra,
  };
}

const follower = (i: number): DeliveryCandidate => ({
  ...head(`short ${i}`),
  id: `01KBC00000000000000000000${i}`,
});

describe('an oversized head within one page', () => {
  it('over the Claude hook cap, within a Claude page: the envelope names the listing, not a read in parts', () => {
    const body = 'a'.repeat(12_000);
    const rendered = renderDelivery({
      agent: 'bot',
      totalPending: 6,
      candidates: [head(body), ...[1, 2, 3, 4, 5].map(follower)],
      limits: HOOK_LIMITS.claude,
    });
    expect(rendered.included).toEqual([]);
    expect(rendered.oversizedHead).toMatchObject({ id: ID, list: 'sluice message ls --json --include-body' });
    const [, json, instruction] = rendered.text.split('\n');
    expect(JSON.parse(json as string).oversizedHead.list).toBe('sluice message ls --json --include-body');
    expect(instruction).toContain(
      'fetch it and the messages behind it with complete bodies, oldest first: sluice message ls --json --include-body',
    );
    expect(instruction).not.toContain('--since');
    expect(instruction).not.toContain('in parts');
    expect(rendered.text.length).toBeLessThanOrEqual(10_000);
  });

  it('larger than a page: the listing, which brings it in parts; the instruction says to wait for the last part', () => {
    for (const [body, limits] of [
      ['a'.repeat(40_000), HOOK_LIMITS.claude],
      ['a'.repeat(12_000), HOOK_LIMITS.codex],
    ] as const) {
      const rendered = renderDelivery({
        agent: 'bot',
        totalPending: 2,
        candidates: [head(body), follower(1)],
        limits,
      });
      expect(rendered.oversizedHead?.list).toBe('sluice message ls --json --include-body');
      const instruction = rendered.text.split('\n')[2] as string;
      expect(instruction).toContain(
        'It is larger than one listing page: fetch it and the messages behind it, oldest first: sluice message ls --json --include-body',
      );
      expect(instruction).toContain('answer it only once you have its last part');
      expect(instruction).not.toContain('--since');
    }
  });

  it('no page size given (the provider-neutral envelope): read in parts, the list chained to its reply', () => {
    const rendered = renderDelivery({
      agent: 'bot',
      totalPending: 2,
      candidates: [head('a'.repeat(12_000)), follower(1)],
      limits: { maxMessages: 16, maxBytes: 16_384, maxUnits: 10_000 },
    });
    expect(rendered.oversizedHead?.list).toBeUndefined();
    expect(rendered.text).toContain(`sluice message read ${ID} --json`);
    expect(rendered.text).toContain(`--include-body --since ${ID}`);
  });

  it('the page the envelope names holds the head whole when it says it fits, else its first part, for hostile heads in both clients', () => {
    let named = 0;
    fc.assert(
      fc.property(
        fc.oneof(
          fc
            .tuple(
              fc.constantFrom('x', '語', '😀', '"', '\u0001', '\\'),
              fc.integer({ min: 3_000, max: 30_000 }),
            )
            .map(([u, n]) => u.repeat(Math.ceil(n / u.length))),
          fc
            .tuple(fc.array(hostilePiece, { minLength: 1, maxLength: 6 }), fc.integer({ min: 50, max: 900 }))
            .map(([p, n]) => p.join('').repeat(n)),
        ),
        hostileString(80),
        fc.option(hostileString(200), { nil: null }),
        fc.constantFrom<'claude' | 'codex'>('claude', 'codex'),
        (body, from, subject, client) => {
          const candidate = head(body, { from, subject, channel: `dm:${from},bot` });
          const rendered = renderDelivery({
            agent: 'bot',
            totalPending: 1,
            candidates: [candidate],
            limits: HOOK_LIMITS[client],
          });
          if (rendered.oversizedHead === null) return;
          expect(rendered.oversizedHead.list).toBe('sluice message ls --json --include-body');
          const fits = rendered.text.includes('It fits one listing');
          if (fits) named++;
          const env = client === 'codex' ? { CODEX_THREAD_ID: 't' } : { CLAUDECODE: '1' };
          const budget = readBudgetFor(env, {});
          expect(budget.bytes).toBe(
            defaultPageBytes(client === 'codex' ? CODEX_MAX_BYTES : CLAUDE_MAX_BYTES),
          );
          const { id, channel, sender, createdAt, replyTo, attachments } = candidate;
          const row = {
            id,
            channel,
            from,
            sender,
            createdAt,
            subject,
            replyTo,
            state: 'waiting',
            attachments,
            body,
          };
          const page = boundedMessagePage([row], true, budget, {
            listAfter: (after, maxBytes) =>
              `sluice message ls --json --include-body --since ${after} --max-bytes ${maxBytes}`,
            listFrom: (at, offset, maxBytes) =>
              `sluice message ls --json --include-body --resume ${at} --offset ${offset} --max-bytes ${maxBytes}`,
            readFrom: (after) => `sluice message read ${after} --json`,
          });
          expect(page.count).toBe(1);
          expect(utf8Length(page.text)).toBeLessThanOrEqual(budget.bytes as number);
          const [shown] = JSON.parse(page.text).messages;
          // The envelope's check keeps a margin: a head it calls larger may still fit whole.
          if (fits || shown.part === undefined) expect(shown).toEqual(row);
          else expect(shown.part).toEqual({ offset: 0, total: body.length });
        },
      ),
      { numRuns: 300 },
    );
    expect(named).toBeGreaterThan(0);
  });
});
