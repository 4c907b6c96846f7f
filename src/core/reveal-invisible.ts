// Imports nothing, so the web page (web/src) bundles the same rule the CLI, the driver and the
// Telegram bridge apply: one definition of which characters are shown as escapes.

// Controls (C0, C1), invisible format characters (bidi overrides such as U+202E, zero-width
// marks, BOM) and line/paragraph separators.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
const INVISIBLE_BUT_NEWLINE = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
// Prose keeps the whitespace a body is written with (line break, tab, carriage return) and the
// joiners that build emoji sequences and shape Persian and Indic script (ZWNJ U+200C, ZWJ U+200D):
// none of them reorders or hides text. Every bidi control is still revealed.
const INVISIBLE_IN_PROSE = /(?![\n\t\r\u200c\u200d])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

/** How much ordinary text layout {@link revealInvisible} leaves alone. */
export interface RevealOptions {
  /** Keep `\n`, for text shown on several lines. */
  keepNewlines?: boolean;
  /**
   * Keep what prose needs besides `\n`: tab, carriage return and the zero-width (non-)joiners.
   * For message bodies, subjects and names a person reads; implies `keepNewlines`.
   */
  prose?: boolean;
}

/**
 * The text with every character that acts instead of showing written as a visible escape
 * (`\u202e`, `\u001b`): what a person is asked to allow reads as what it holds. A terminal would
 * otherwise run an escape sequence, and a bidi override reorders `… # ‮hs | x/moc.live//:sptth`
 * into a command it does not run. `keepNewlines` keeps `\n` for text shown on several lines. The
 * escapes are JSON's (a character beyond U+FFFF as its two UTF-16 units), so applied to JSON text
 * the result is the same JSON.
 */
export function revealInvisible(text: string, options: RevealOptions = {}): string {
  const pattern = options.prose
    ? INVISIBLE_IN_PROSE
    : options.keepNewlines
      ? INVISIBLE_BUT_NEWLINE
      : INVISIBLE;
  return text.replace(pattern, (c) =>
    Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join(
      '',
    ),
  );
}
