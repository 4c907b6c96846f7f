// The text forms of `sluice message ls` and `read` (the JSON forms are the lossless ones). A model
// can run them too, so what Sluice writes and what a sender wrote never look alike: Sluice's lines
// start at the margin, every line of a body starts with BODY_MARGIN, and a preview is one line.

/** Starts every line of a body in text listings, so no body line can pass for a header or `next:`. */
export const BODY_MARGIN = '> ';

/** Anything a terminal or a model could take for a line break or a control, in a one-line preview. */
const BREAKS_AND_CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** The first line of `text`, cut to `max` characters, with no control or line-break character left. */
export function firstLine(text: string, max = 80): string {
  const line = (text.split('\n', 1)[0] ?? '').replace(BREAKS_AND_CONTROLS, ' ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** A body for a text listing: each of its lines (any line-break convention) behind {@link BODY_MARGIN}. */
export function quotedBody(body: string): string {
  return body
    .split(/\r\n|[\n\r\u000b\u000c\u001c-\u001e\u0085\u2028\u2029]/)
    .map((line) => `${BODY_MARGIN}${line}`)
    .join('\n');
}
