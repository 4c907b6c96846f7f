import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonLength, measure, utf8Length, utf16Length } from '../../src/core/measure.js';
import { hostileString } from './arbitraries.js';

describe('measure', () => {
  it('counts UTF-8 bytes exactly as an encoder writes them, lone surrogates as 3 bytes', () => {
    expect(utf8Length('')).toBe(0);
    expect(utf8Length('a')).toBe(1);
    expect(utf8Length('é')).toBe(2);
    expect(utf8Length('中')).toBe(3);
    expect(utf8Length('😀')).toBe(4);
    expect(utf8Length('\ud800')).toBe(3);
    expect(utf8Length('\udc00\ud800')).toBe(6);
    fc.assert(
      fc.property(hostileString(200), (s) => {
        expect(utf8Length(s)).toBe(new TextEncoder().encode(s).length);
      }),
    );
  });

  it('counts UTF-16 code units as string length does', () => {
    expect(utf16Length('😀')).toBe(2);
    expect(measure('😀', 'utf16')).toBe(2);
    expect(measure('😀', 'utf8')).toBe(4);
  });

  it('measures the JSON text of a value, escapes included', () => {
    expect(jsonLength({ a: '"\n' }, 'utf16')).toBe('{"a":"\\"\\n"}'.length);
    expect(jsonLength('\ud800', 'utf16')).toBe(8);
    expect(jsonLength(undefined, 'utf8')).toBe(0);
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value);
        expect(jsonLength(value, 'utf16')).toBe(text.length);
        expect(jsonLength(value, 'utf8')).toBe(Buffer.byteLength(text));
      }),
    );
  });
});
