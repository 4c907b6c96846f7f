import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  boundedMessagePage,
  boundedMessagePart,
  type MessageRow,
} from '../../src/surfaces/cli/bounded-read.js';
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
 * Follows the continuation chain as a model would: pages of the list, and for a head too large
 * alone its parts, then the list after it. Returns each message's body as the reader saw it.
 */
function drain(rows: readonly (MessageRow & { body: string })[], maxChars: number, pageSize: number) {
  const seen: { id: string; body: string }[] = [];
  const outputs: string[] = [];
  const listFrom = (start: number) => {
    const slice = rows.slice(start, start + pageSize);
    return boundedMessagePage(slice, start + pageSize < rows.length, maxChars, commands).text;
  };
  let next: string | null = commands.listAfter('start');
  let start = 0;
  for (let guard = 0; next !== null; guard++) {
    if (guard > 10_000) throw new Error('the chain does not end');
    if (next.startsWith('sluice message ls')) {
      const text = listFrom(start);
      outputs.push(text);
      const page = JSON.parse(text);
      for (const m of page.messages) seen.push({ id: m.id, body: m.body });
      start += page.messages.length;
      if (page.messages.length === 0) {
        // The head is read in parts, then the list continues after it.
        const head = rows[start] as MessageRow & { body: string };
        expect(page.next).toBe(commands.readFrom(head.id, 0));
        expect(page.after).toBe(commands.listAfter(head.id));
        let body = '';
        let part: string | null = page.next;
        let offset = 0;
        while (part !== null) {
          const text2 = boundedMessagePart(head, offset, maxChars, commands);
          outputs.push(text2);
          const m = JSON.parse(text2);
          body += m.body;
          offset = m.part ? m.part.offset + m.body.length : head.body.length;
          part = m.next;
          if (part !== null) expect(part).toBe(commands.readFrom(head.id, offset));
        }
        seen.push({ id: head.id, body });
        start += 1;
        next = start < rows.length ? page.after : null;
      } else {
        next = page.next;
        if (next !== null) expect(next).toBe(commands.listAfter(page.messages.at(-1).id));
      }
    }
  }
  return { seen, outputs };
}

describe('bounded model reads', () => {
  it('never print more than the budget, show complete bodies, and the chain visits every message once', () => {
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
