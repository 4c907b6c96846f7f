// Imports nothing, so the web page (web/src) bundles the same rule the CLI, the driver and the
// Telegram bridge apply: one definition of which characters are shown as escapes.

// Controls (C0, C1), invisible format characters (bidi overrides such as U+202E, zero-width
// marks, BOM) and line/paragraph separators.
const INVISIBLE_CLASS = String.raw`[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]`;
// Prose keeps the whitespace a body is written with (line break, tab, carriage return) and the
// joiners that build emoji sequences and shape Persian and Indic script (ZWNJ U+200C, ZWJ U+200D):
// none of them reorders or hides text. Every bidi control is still revealed.
const PROSE_KEEPS = '\n\t\r\u200c\u200d';

/** The pattern of invisible characters less `kept` (characters a caller keeps), built once. */
const PATTERNS = new Map<string, RegExp>();
function invisiblePattern(kept: string): RegExp {
  let pattern = PATTERNS.get(kept);
  if (!pattern) {
    pattern = new RegExp(kept === '' ? INVISIBLE_CLASS : `(?![${kept}])${INVISIBLE_CLASS}`, 'gu');
    PATTERNS.set(kept, pattern);
  }
  return pattern;
}

/** How much ordinary text layout {@link revealInvisible} leaves alone. */
export interface RevealOptions {
  /** Keep `\n`, for text shown on several lines. */
  keepNewlines?: boolean;
  /** Keep `\t` (layout in a body, harmless to a terminal, unlike `\r`). */
  keepTabs?: boolean;
  /**
   * Keep what prose needs besides `\n`: tab, carriage return and the zero-width (non-)joiners.
   * For message bodies, subjects and names a person reads on the page; implies `keepNewlines`.
   * Not for a terminal, where a carriage return overwrites the line.
   */
  prose?: boolean;
}

/**
 * The text with every character that acts instead of showing written as a visible escape
 * (`\u202e`, `\u001b`): what a person is asked to allow reads as what it holds. A terminal would
 * otherwise run an escape sequence, and a bidi override reorders `… # ‮hs | x/moc.live//:sptth`
 * into a command it does not run. The escapes are JSON's (a character beyond U+FFFF as its two
 * UTF-16 units), so applied to JSON text the result is the same JSON.
 */
export function revealInvisible(text: string, options: RevealOptions = {}): string {
  const kept = options.prose
    ? PROSE_KEEPS
    : `${options.keepNewlines ? '\n' : ''}${options.keepTabs ? '\t' : ''}`;
  return text.replace(invisiblePattern(kept), (c) =>
    Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join(
      '',
    ),
  );
}
