// The text forms of `sluice message ls`, `read` and `channel history` (the JSON forms are the lossless ones). A model
// can run them too, so what Sluice writes and what a sender wrote never look alike: Sluice's lines
// start at the margin, every line of a body starts with BODY_MARGIN, and a preview is one line.
// Nothing a sender wrote reaches a terminal as a control: ESC, other controls and bidi overrides
// show as their escapes (`\u001b`, `\u202e`), so a subject cannot forge a line or recolour the screen.

import { revealInvisible } from '../../core/text.js';

/** Starts every line of a body in text listings, so no body line can pass for a header or `next:`. */
export const BODY_MARGIN = '> ';

/** Every line-break convention a reader might split on (Python's splitlines, Unicode). */
const LINE_BREAKS = /\r\n|[\n\r\u000b\u000c\u001c-\u001e\u0085\u2028\u2029]/;

/** Anything a terminal or a model could take for a line break or a control, in a one-line preview. */
const BREAKS_AND_CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/**
 * The first line of `text`, cut to `max` characters, with no control or line-break character left
 * (those become spaces; bidi overrides and other invisible marks show as escapes).
 */
export function firstLine(text: string, max = 80): string {
  const line = revealInvisible((text.split('\n', 1)[0] ?? '').replace(BREAKS_AND_CONTROLS, ' '));
  if (line.length <= max) return line;
  // Cut between whole characters and whole escapes: escaping made `line` longer than what was
  // written, and a cut inside `\u202e` or a surrogate pair would print half of one.
  let cut = '';
  for (const piece of line.match(ESCAPE_OR_CHARACTER) ?? []) {
    if (cut.length + piece.length > max - 1) break;
    cut += piece;
  }
  return `${cut}…`;
}

/** One escape `revealInvisible` wrote, or one whole character (a surrogate pair stays together). */
const ESCAPE_OR_CHARACTER = /\\u[0-9a-f]{4}|[\s\S]/gu;

/** True when `text` has no line break under any convention (it can stay on its header's line). */
export function oneLine(text: string): boolean {
  return !LINE_BREAKS.test(text);
}

/**
 * A body for a text listing: each of its lines (any line-break convention) behind {@link BODY_MARGIN},
 * invisible characters but tabs shown as escapes.
 */
export function quotedBody(body: string): string {
  return body
    .split(LINE_BREAKS)
    .map((line) => `${BODY_MARGIN}${revealInvisible(line, { keepTabs: true })}`)
    .join('\n');
}

/** One line of text a sender chose (a subject, a file name), as a terminal may show it: see {@link revealInvisible}. */
export function terminalLine(text: string): string {
  return revealInvisible(text);
}

/** A whole body as a terminal may show it: its newlines and tabs kept, every other invisible character as an escape. */
export function terminalBody(text: string): string {
  return revealInvisible(text, { keepNewlines: true, keepTabs: true });
}
