import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonAround } from '../../src/core/json-frame.js';
import { hostileString } from './arbitraries.js';

describe('jsonAround: the text on either side of one member', () => {
  it('joins with the member to exactly what JSON.stringify writes', () => {
    fc.assert(
      fc.property(hostileString(30), hostileString(30), fc.integer(), (a, b, n) => {
        const value = {
          status: 'body',
          id: a,
          part: { offset: n, text: b, end: null },
          next: a,
          gone: undefined,
        };
        const frame = jsonAround(value, ['part', 'text']);
        expect(frame.before + JSON.stringify(b) + frame.after).toBe(JSON.stringify(value));
        const rows = jsonAround(value, ['id']);
        expect(rows.before + JSON.stringify(a) + rows.after).toBe(JSON.stringify(value));
      }),
    );
  });

  it('frames the first and the last member', () => {
    expect(jsonAround({ rows: [], more: true }, ['rows'])).toEqual({
      before: '{"rows":',
      after: ',"more":true}',
    });
    expect(jsonAround({ more: true, rows: [] }, ['rows'])).toEqual({
      before: '{"more":true,"rows":',
      after: '}',
    });
  });

  it('refuses a path that names no member or goes through a non-object', () => {
    expect(() => jsonAround({ a: 1 }, ['b'])).toThrow(/no member/);
    expect(() => jsonAround({ a: 1 }, ['a', 'b'])).toThrow(/not an object/);
    expect(() => jsonAround({ 1: 1 }, ['1'])).toThrow(/cannot split/);
  });
});
