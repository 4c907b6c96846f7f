// What the page shows of text others wrote (bodies, subjects, previews, names): the host's own rule
// (src/core/reveal-invisible.ts, imported, not restated), so a bidi override such as U+202E in a
// message reads as `\u202e` instead of reversing what follows it. No DOM types: Node tests import it.
import { revealInvisible } from '../../src/core/reveal-invisible.js';

/**
 * Prose as the page shows it: bidi controls, zero-width spaces and other invisible format or
 * control characters written as `\u202e`-style escapes; line breaks, tabs and the emoji/script
 * joiners kept.
 */
export function shownText(text: string): string {
  return revealInvisible(text, { prose: true });
}

/** A command, a path or JSON as an approval card shows it: every invisible character revealed but `\n`. */
export function shownExactly(text: string): string {
  return revealInvisible(text, { keepNewlines: true });
}
