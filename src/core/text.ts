import { SluiceError } from './errors.js';
import { revealInvisible } from './reveal-invisible.js';

/** The index of the first lone surrogate in `text`, or -1 when it is well-formed Unicode. */
export function firstLoneSurrogate(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0xd800 || unit > 0xdfff) continue;
    const next = text.charCodeAt(i + 1);
    if (unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      i++;
      continue;
    }
    return i;
  }
  return -1;
}

// Node 20 has String.prototype.isWellFormed (ES2024); the TypeScript lib here is ES2023.
type WellFormedCheck = { isWellFormed(): boolean };

/** True when `text` holds no lone surrogate (native, linear, no allocation). */
export function isWellFormed(text: string): boolean {
  return (text as string & WellFormedCheck).isWellFormed();
}

/**
 * Refuses text that is not well-formed Unicode (a lone surrogate): UTF-8 cannot hold it, so both
 * databases would store U+FFFD instead and the text would read back changed. Text is stored
 * exactly or refused with `invalid_params` naming the field — never altered silently.
 * `undefined` and `null` (an absent optional field) pass.
 */
export function requireWellFormed(field: string, value: unknown): void {
  if (typeof value !== 'string' || isWellFormed(value)) return;
  const at = firstLoneSurrogate(value);
  throw new SluiceError(
    'invalid_params',
    `${field} is not well-formed Unicode (a lone surrogate at UTF-16 offset ${at}); nothing was stored`,
    { field },
  );
}

/** {@link requireWellFormed} over several fields, in order. */
export function requireWellFormedFields(fields: Readonly<Record<string, unknown>>): void {
  for (const [field, value] of Object.entries(fields)) requireWellFormed(field, value);
}

/** At most `max` UTF-16 units of `text`, never ending inside a surrogate pair. */
export function sliceWhole(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = max > 0 && /[\ud800-\udbff]/.test(text.charAt(max - 1)) ? max - 1 : max;
  return text.slice(0, end);
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The text UTF-8 `bytes` spell, BOM included, or `undefined` when they are not UTF-8: decoders
 * that substitute U+FFFD for bad bytes would change the text without a word.
 */
export function decodeUtf8Exactly(bytes: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}

// The rule lives in a module of its own, which the web page bundles too.
export { type RevealOptions, revealInvisible } from './reveal-invisible.js';

/**
 * User input echoed in an error line (`no message "…"`): JSON-quoted, cut to `max` UTF-16 units
 * (whole characters, `…` when cut), every control, bidi override and line separator written as
 * its escape. So an id with a newline cannot add a line, and one with ESC never reaches a
 * terminal, whichever surface shows the error. The one helper for every such echo.
 */
export function quoteInput(value: unknown, max = 80): string {
  const text = String(value);
  const cut = sliceWhole(text, max);
  return revealInvisible(JSON.stringify(cut.length < text.length ? `${cut}…` : cut));
}
