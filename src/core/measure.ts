import { Buffer } from 'node:buffer';

/**
 * The two ways Sluice counts text. Model budgets (MCP tool results, adapter caps) count UTF-16 code
 * units because that is what `string.length` and the providers report; byte caps (harness delivery,
 * device envelopes) count the UTF-8 encoding that actually crosses the wire.
 */
export type Unit = 'utf16' | 'utf8';

/** Length in UTF-16 code units (what `string.length` reports). */
export function utf16Length(s: string): number {
  return s.length;
}

/**
 * Bytes of the UTF-8 encoding of `s`. A lone surrogate counts 3 bytes because encoders replace it
 * with U+FFFD; `Buffer.byteLength` follows that rule and runs natively, which matters on hot paths.
 */
export function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** Length of `s` in the given unit. */
export function measure(s: string, unit: Unit): number {
  return unit === 'utf16' ? utf16Length(s) : utf8Length(s);
}

/**
 * Length of `JSON.stringify(value)` in the given unit. Values with no JSON text (undefined,
 * functions, symbols) measure 0, since they contribute nothing when they stand alone.
 */
export function jsonLength(value: unknown, unit: Unit): number {
  const text: string | undefined = JSON.stringify(value);
  return text === undefined ? 0 : measure(text, unit);
}
