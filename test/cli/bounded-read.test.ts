import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bodyVersion, boundedMessagePart, type MessageRow } from '../../src/surfaces/cli/bounded-read.js';
import { boundedMessagePage } from '../../src/surfaces/cli/message-page.js';
import { commands, row } from './bounded-read-fixtures.js';

// Hostile bodies: lone surrogates, pairs, quotes, controls, long runs that escape to 6 characters.
const hostileBody = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 400 }),
  fc.string({
    unit: fc.constantFrom('"', '\\', '\n', '\u0001', '\ud800', '\udc00', '😀', 'x'),
    maxLength: 3000,
  }),
  fc.nat({ max: 9000 }).map((n) => '\u0000'.repeat(n)),
);

/**
 * Follows the continuation chain as a model would, `pageSize` rows fetched per page: whole rows,
 * and a body split across pages joined from its parts. Returns each message's body as the reader
 * saw it.
 */
function drain(rows: readonly (MessageRow & { body: string })[], maxChars: number, pageSize: number) {
  const seen: { id: string; body: string }[] = [];
  const outputs: string[] = [];
  let start = 0;
  let joined = '';
  for (let guard = 0; ; guard++) {
    if (guard > 10_000) throw new Error('the chain does not end');
    const slice = rows.slice(start, start + pageSize);
    const text = boundedMessagePage(
      slice,
      start + pageSize < rows.length,
      maxChars,
      commands,
      joined.length,
    ).text;
    outputs.push(text);
    const page = JSON.parse(text);
    expect(page.messages.length).toBeGreaterThan(0);
    for (const m of page.messages) {
      const stored = (rows[start] as MessageRow & { body: string }).body;
      expect(m.id).toBe(rows[start]?.id);
      if (m.part === undefined) {
        seen.push({ id: m.id, body: m.body });
        start++;
        continue;
      }
      expect(m.part).toEqual({ offset: joined.length, total: stored.length });
      joined += m.body;
      // Never between the halves of a surrogate pair.
      const at = joined.length;
      expect(/[\ud800-\udbff]/.test(stored[at - 1] ?? '') && /[\udc00-\udfff]/.test(stored[at] ?? '')).toBe(
        false,
      );
      if (joined.length < stored.length) {
        expect(page.next).toBe(commands.listFrom(m.id, joined.length, bodyVersion(stored)));
        continue;
      }
      seen.push({ id: m.id, body: joined });
      joined = '';
      start++;
    }
    if (page.next === null) break;
    if (joined === '') expect(page.next).toBe(commands.listAfter(page.messages.at(-1).id));
  }
  return { seen, outputs };
}

describe('bounded model reads', () => {
  it('never print more than the budget, and the chain visits every message once, a body split across pages rejoining exactly', () => {
    fc.assert(
      fc.property(
        fc.array(hostileBody, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 2_000, max: 12_000 }),
        fc.integer({ min: 1, max: 6 }),
        (bodies, maxChars, pageSize) => {
          const rows = bodies.map((b, i) => row(`M${i}`, b));
          const { seen, outputs } = drain(rows, maxChars, pageSize);
          for (const out of outputs) expect(out.length).toBeLessThanOrEqual(maxChars);
          expect(seen).toEqual(rows.map((r) => ({ id: r.id, body: r.body })));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a page holds the largest FIFO prefix that fits', () => {
    const rows = ['a'.repeat(5000), 'b'.repeat(5000), 'c'.repeat(5000)].map((b, i) => row(`M${i}`, b));
    const page = boundedMessagePage(rows, false, 11_000, commands);
    expect(page.count).toBe(2);
    expect(JSON.parse(page.text).next).toBe(commands.listAfter('M1'));
    const all = boundedMessagePage(rows, false, 30_000, commands);
    expect(JSON.parse(all.text)).toMatchObject({ next: null });
    expect(Object.keys(JSON.parse(all.text)).at(-1)).toBe('next');
  });

  it('a message that fits is printed whole with next null', () => {
    const text = boundedMessagePart(row('M1', 'hello'), 0, 30_000, commands);
    expect(JSON.parse(text)).toEqual({ ...row('M1', 'hello'), next: null });
  });

  it('refuses an offset outside the body with one line', () => {
    expect(() => boundedMessagePart(row('M1', 'hello'), 6, 30_000, commands)).toThrow(/--offset must be/);
  });
});
