// A message body as people read it: Markdown rendered safely (markdown.ts), and a body longer
// than about forty lines clipped behind "Show more", which tells how much is hidden.

import { useMemo, useState } from 'preact/hooks';
import { renderMarkdown } from '../markdown.js';
import { formatBytes } from '../media.js';
import { shownText } from '../shown-text.js';

/** Bodies with more display lines than this start collapsed. */
export const COLLAPSE_LINES = 40;
/** A source line this long counts as several display lines (it wraps). */
const WRAP_CHARS = 100;

/** Roughly how many lines a body takes on screen: its lines, long ones counted as they wrap. */
export function displayLines(body: string): number {
  let lines = 0;
  for (const line of body.split('\n')) lines += Math.max(1, Math.ceil(line.length / WRAP_CHARS));
  return lines;
}

export function MessageBody({ body, bytes }: { body: string; bytes: number }) {
  // Invisible characters revealed before Markdown sees them (shown-text.ts): a bidi override in a
  // body cannot reorder the rendered text.
  const html = useMemo(() => renderMarkdown(shownText(body)), [body]);
  const lines = useMemo(() => displayLines(body), [body]);
  const collapsible = lines > COLLAPSE_LINES;
  const [expanded, setExpanded] = useState(false);
  const collapsed = collapsible && !expanded;
  return (
    <>
      <div
        class={`body markdown${collapsed ? ' collapsed' : ''}`}
        // Safe by construction: markdown-it with html disabled, then DOMPurify (markdown.ts).
        dangerouslySetInnerHTML={{ __html: html }}
      />
      {collapsible && (
        <button
          type="button"
          class="button ghost show-more"
          aria-expanded={expanded}
          onClick={() => setExpanded(!expanded)}
        >
          {expanded
            ? 'Show less'
            : `Show more (${body.split('\n').length} lines, ${formatBytes(bytes || new TextEncoder().encode(body).length)})`}
        </button>
      )}
    </>
  );
}
