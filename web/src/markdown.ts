// Message bodies are Markdown written by people and agents. They are rendered by markdown-it with
// raw HTML disabled (so `<script>` or `<img onerror>` in a body is shown as text, never parsed),
// images disabled (a remote image would be a tracking pixel, and the CSP blocks it anyway), and the
// output then passed through DOMPurify with a short allow-list as a second, independent line of
// defence. Links open in a new tab with `rel="noopener noreferrer"`.

import DOMPurify from 'dompurify';
import MarkdownIt from 'markdown-it';

const md = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false });
md.disable(['image']);

const ALLOWED_TAGS = [
  'a',
  'p',
  'br',
  'strong',
  'em',
  's',
  'del',
  'code',
  'pre',
  'blockquote',
  'ul',
  'ol',
  'li',
  'hr',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'table',
  'thead',
  'tbody',
  'tr',
  'th',
  'td',
];
// No `style`: the CSP refuses inline styles (markdown-it sets them for table alignment).
const ALLOWED_ATTR = ['href', 'title', 'start', 'class'];

let hooked = false;
function purifier(): typeof DOMPurify {
  if (!hooked) {
    hooked = true;
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      if (node.tagName === 'A') {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
    });
  }
  return DOMPurify;
}

/** Safe HTML for a Markdown body: no raw HTML, no script, no event handlers, no images. */
export function renderMarkdown(text: string): string {
  return purifier().sanitize(md.render(text).trim(), {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#|\/(?!\/))/i,
  });
}
