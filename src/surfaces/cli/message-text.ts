// The text forms of `sluice message ls`, `read` and `channel history` (the JSON forms are the lossless ones). A model
// can run them too, so what Sluice writes and what a sender wrote never look alike: Sluice's lines
// start at the margin, every line of a body starts with BODY_MARGIN, and a preview is one line.

/** Starts every line of a body in text listings, so no body line can pass for a header or `next:`. */
export const BODY_MARGIN = '> ';

/** Every line-break convention a reader might split on (Python's splitlines, Unicode). */
const LINE_BREAKS = /\r\n|[\n\r\u000b\u000c\u001c-\u001e\u0085\u2028\u2029]/;

/** Anything a terminal or a model could take for a line break or a control, in a one-line preview. */
const BREAKS_AND_CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** The first line of `text`, cut to `max` characters, with no control or line-break character left. */
export function firstLine(text: string, max = 80): string {
  const line = (text.split('\n', 1)[0] ?? '').replace(BREAKS_AND_CONTROLS, ' ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** True when `text` has no line break under any convention (it can stay on its header's line). */
export function oneLine(text: string): boolean {
  return !LINE_BREAKS.test(text);
}

/** A body for a text listing: each of its lines (any line-break convention) behind {@link BODY_MARGIN}. */
export function quotedBody(body: string): string {
  return body
    .split(LINE_BREAKS)
    .map((line) => `${BODY_MARGIN}${line}`)
    .join('\n');
}
