import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CursorBinding,
  canonicalFilter,
  decodeCursor,
  encodeCursor,
  encodedCursorLength,
  MAX_CURSOR_LENGTH,
} from '../../src/core/cursor.js';
import { SluiceError } from '../../src/core/errors.js';
import { hostileId, hostileString } from './arbitraries.js';

const secret = new Uint8Array(32).fill(7);
const otherSecret = new Uint8Array(32).fill(8);
const binding: CursorBinding = { caller: 'agent-a', filter: '{"unread":true}', target: 'inbox:gen-1' };

function refusal(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof SluiceError) {
      expect(err.message).not.toContain('\n');
      return err.code;
    }
    throw err;
  }
  return undefined;
}

const bindingArb: fc.Arbitrary<CursorBinding> = fc.record({
  caller: hostileId,
  filter: hostileId,
  target: hostileId,
});
const payloadArb = fc.record(
  { last: fc.nat(), seq: fc.nat(), note: hostileString(20) },
  { requiredKeys: ['last'] },
);

describe('cursors', () => {
  it('round-trip their payload for the binding they were issued to', () => {
    fc.assert(
      fc.property(bindingArb, payloadArb, (b, payload) => {
        const token = encodeCursor(secret, b, payload);
        expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(decodeCursor(secret, b, token)).toEqual(JSON.parse(JSON.stringify(payload)));
      }),
      { numRuns: 60 },
    );
  });

  it('say how long a token will be without signing it', () => {
    fc.assert(
      fc.property(bindingArb, payloadArb, (b, payload) => {
        expect(encodedCursorLength(payload)).toBe(encodeCursor(secret, b, payload).length);
      }),
      { numRuns: 100 },
    );
  });

  it('refuse a token with any single bit flipped', () => {
    const token = encodeCursor(secret, binding, { last: 41, seq: 9 });
    for (let i = 0; i < token.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const flipped =
          token.slice(0, i) + String.fromCharCode(token.charCodeAt(i) ^ (1 << bit)) + token.slice(i + 1);
        expect(refusal(() => decodeCursor(secret, binding, flipped))).toBe('invalid_cursor');
      }
    }
    const bytes = Buffer.from(token, 'base64url');
    for (let i = 0; i < bytes.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const copy = Buffer.from(bytes);
        copy[i] = copy[i]! ^ (1 << bit);
        expect(refusal(() => decodeCursor(secret, binding, copy.toString('base64url')))).toBe(
          'invalid_cursor',
        );
      }
    }
  });

  it('refuse another caller, filter, target or secret', () => {
    fc.assert(
      fc.property(bindingArb, bindingArb, payloadArb, (a, b, payload) => {
        const token = encodeCursor(secret, a, payload);
        for (const key of ['caller', 'filter', 'target'] as const) {
          if (a[key] === b[key]) continue;
          expect(refusal(() => decodeCursor(secret, { ...a, [key]: b[key] }, token))).toBe('invalid_cursor');
        }
        expect(refusal(() => decodeCursor(otherSecret, a, token))).toBe('invalid_cursor');
      }),
      { numRuns: 60 },
    );
  });

  it('bind fields unambiguously, NUL and shifted boundaries included', () => {
    const pairs: [CursorBinding, CursorBinding][] = [
      [
        { caller: 'ab', filter: '', target: 't' },
        { caller: 'a', filter: 'b', target: 't' },
      ],
      [
        { caller: 'a\u0000', filter: 'b', target: 't' },
        { caller: 'a', filter: '\u0000b', target: 't' },
      ],
      [
        { caller: '\ud800', filter: '', target: '' },
        { caller: '\ufffd', filter: '', target: '' },
      ],
    ];
    for (const [a, b] of pairs) {
      const token = encodeCursor(secret, a, { last: 1 });
      expect(refusal(() => decodeCursor(secret, b, token))).toBe('invalid_cursor');
    }
  });

  it('refuse non-strings, oversized, malformed and truncated tokens with one clear line', () => {
    const token = encodeCursor(secret, binding, { last: 1 });
    for (const bad of [
      undefined,
      null,
      42,
      {},
      [token],
      Buffer.from(token),
      '',
      'not base64!',
      'AAAA',
      `${token}=`,
      token.slice(0, -1),
      token.slice(0, 43),
      `${token}AA`,
      'A'.repeat(MAX_CURSOR_LENGTH + 1),
    ]) {
      expect(refusal(() => decodeCursor(secret, binding, bad))).toBe('invalid_cursor');
    }
  });

  it('will not issue a token longer than decoding accepts', () => {
    expect(refusal(() => encodeCursor(secret, binding, { pad: 'x'.repeat(MAX_CURSOR_LENGTH) }))).toBe(
      'too_large',
    );
    const near = encodeCursor(secret, binding, { pad: 'x'.repeat(12_000) });
    expect(near.length).toBeLessThanOrEqual(MAX_CURSOR_LENGTH);
    expect(decodeCursor(secret, binding, near)).toEqual({ pad: 'x'.repeat(12_000) });
  });
});

describe('canonicalFilter', () => {
  it('is independent of key order, drops undefined and keeps array order', () => {
    expect(canonicalFilter({ b: 1, a: { d: [2, 1], c: undefined } })).toBe('{"a":{"d":[2,1]},"b":1}');
    expect(canonicalFilter({ a: { d: [2, 1] }, b: 1 })).toBe(canonicalFilter({ b: 1, a: { d: [2, 1] } }));
    expect(canonicalFilter({})).toBe('{}');
  });

  it('gives the same text for any permutation of the same filter', () => {
    fc.assert(
      fc.property(fc.dictionary(hostileString(8), fc.jsonValue({ maxDepth: 2 })), (filter) => {
        const reversed = Object.fromEntries(Object.entries(filter).reverse());
        expect(canonicalFilter(reversed)).toBe(canonicalFilter(filter));
      }),
    );
  });
});
