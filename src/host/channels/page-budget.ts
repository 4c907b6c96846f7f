import { utf8Length } from '../../core/measure.js';

const EMPTY_PAGE_BYTES = utf8Length(JSON.stringify({ channels: [], nextCursor: null }));

/**
 * Bytes of a channel page's JSON besides its rows and their commas, with a cursor `cursorLength`
 * characters long or none: a token is base64url, one byte a character, in quotes for `null`.
 */
export function pageEnvelopeBytes(cursorLength: number | null): number {
  return cursorLength === null ? EMPTY_PAGE_BYTES : EMPTY_PAGE_BYTES - 'null'.length + cursorLength + 2;
}
