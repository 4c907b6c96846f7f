import { Buffer } from 'node:buffer';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { SluiceError } from './errors.js';

/**
 * What a cursor is bound to (I6): who may use it, for which filter, over which target (a channel,
 * an inbox generation, a message projection's hash…). A cursor used under any other binding is
 * refused.
 */
export interface CursorBinding {
  caller: string;
  filter: string;
  target: string;
}

/** Longest token `decodeCursor` accepts (16 KiB), so a hostile token costs a bounded amount. */
export const MAX_CURSOR_LENGTH = 16384;

/** Separates cursors from any other use of the same secret. */
const DOMAIN = 'sluice.cursor.v1';
const MAC_BYTES = 32;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/**
 * HMAC-SHA256 over an unambiguous encoding: every field is length-prefixed, and strings are
 * encoded as UTF-16LE so that any JS string (NUL, lone surrogates) maps to distinct bytes.
 */
function mac(secret: Uint8Array, binding: CursorBinding, payloadBytes: Uint8Array): Buffer {
  const hmac = createHmac('sha256', secret);
  const field = (bytes: Uint8Array) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hmac.update(length);
    hmac.update(bytes);
  };
  const text = (s: string) => field(Buffer.from(s, 'utf16le'));
  text(DOMAIN);
  text(binding.caller);
  text(binding.filter);
  text(binding.target);
  field(payloadBytes);
  return hmac.digest();
}

function assertBinding(binding: CursorBinding): void {
  for (const key of ['caller', 'filter', 'target'] as const) {
    if (typeof binding[key] !== 'string') {
      throw new SluiceError('internal', `cursor binding ${key} must be a string`);
    }
  }
}

/**
 * Signs `payload` for `binding` into an opaque base64url token (MAC followed by the payload's
 * JSON). Throws `too_large` when the token would exceed MAX_CURSOR_LENGTH, since decoding would
 * refuse it.
 */
export function encodeCursor(
  secret: Uint8Array,
  binding: CursorBinding,
  payload: Record<string, unknown>,
): string {
  assertBinding(binding);
  // JSON.stringify escapes lone surrogates, so the UTF-8 bytes round-trip exactly.
  const payloadBytes = Buffer.from(JSON.stringify(payload), 'utf8');
  const token = Buffer.concat([mac(secret, binding, payloadBytes), payloadBytes]).toString('base64url');
  if (token.length > MAX_CURSOR_LENGTH) {
    throw new SluiceError('too_large', `cursor payload too large (${token.length} > ${MAX_CURSOR_LENGTH})`);
  }
  return token;
}

/**
 * The length of the token {@link encodeCursor} returns for `payload` (under any binding), without
 * signing it: a reply that budgets room for a cursor it may not send need not compute one.
 */
export function encodedCursorLength(payload: Record<string, unknown>): number {
  return encodedCursorLengthOfBytes(Buffer.byteLength(JSON.stringify(payload), 'utf8'));
}

/** The length of a token whose payload's JSON is `payloadBytes` bytes of UTF-8. */
export function encodedCursorLengthOfBytes(payloadBytes: number): number {
  return Math.ceil(((MAC_BYTES + payloadBytes) * 4) / 3);
}

function refuse(reason: string): never {
  throw new SluiceError('invalid_cursor', `invalid cursor: ${reason}`);
}

/**
 * Verifies `token` for `binding` and returns its payload. Anything else — a non-string, an
 * oversized or malformed token, a bad MAC (tampered, or issued to another caller, filter, target
 * or under another secret) — is `invalid_cursor` with one clear line. The MAC is compared in
 * constant time.
 */
export function decodeCursor(
  secret: Uint8Array,
  binding: CursorBinding,
  token: unknown,
): Record<string, unknown> {
  assertBinding(binding);
  if (typeof token !== 'string') refuse('not a string');
  if (token.length > MAX_CURSOR_LENGTH) refuse(`longer than ${MAX_CURSOR_LENGTH} characters`);
  if (!BASE64URL.test(token)) refuse('not base64url');
  const bytes = Buffer.from(token, 'base64url');
  // Node's decoder ignores stray trailing bits; insisting on the canonical spelling means every
  // changed character is a changed token, not an alias of the same bytes.
  if (bytes.toString('base64url') !== token) refuse('not canonical base64url');
  if (bytes.length <= MAC_BYTES) refuse('too short');
  const payloadBytes = bytes.subarray(MAC_BYTES);
  const expected = mac(secret, binding, payloadBytes);
  if (!timingSafeEqual(expected, bytes.subarray(0, MAC_BYTES))) {
    refuse('signature mismatch (tampered, or issued for another caller, filter or target)');
  }
  let payload: unknown;
  try {
    payload = JSON.parse(payloadBytes.toString('utf8'));
  } catch {
    refuse('payload is not JSON');
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
    refuse('payload is not an object');
  return payload as Record<string, unknown>;
}

/**
 * Stable text for a filter so the same filter always binds the same way: keys sorted at every
 * depth, undefined members dropped (array order is kept: it is meaningful).
 */
export function canonicalFilter(filter: Record<string, unknown>): string {
  return JSON.stringify(sortKeys(filter)) ?? 'null';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  // Respect toJSON (Dates) the way JSON.stringify would, then sort what it produced.
  const maybeToJson = (value as { toJSON?: unknown }).toJSON;
  if (typeof maybeToJson === 'function') return sortKeys(maybeToJson.call(value));
  // A null prototype keeps a "__proto__" member an ordinary key instead of a prototype change.
  const sorted: Record<string, unknown> = Object.create(null);
  for (const key of Object.keys(value).sort()) {
    const member = (value as Record<string, unknown>)[key];
    if (member !== undefined) sorted[key] = sortKeys(member);
  }
  return sorted;
}
