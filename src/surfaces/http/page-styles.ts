import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

// The host renders a few pages itself (sign-in, "link not valid"). They wear the web page's own
// stylesheet: the one Vite built into web/dist, named with a content hash in its index.html. Read
// on each render (these pages are rare), so a rebuilt page is picked up without a restart.

/** What a stylesheet href from the built index may look like: one file under /assets/. */
const ASSET_CSS = /^\/assets\/[A-Za-z0-9._-]+\.css$/;

/**
 * `<link>` tags for the built page's stylesheets and icon, from `<webRoot>/index.html`; only the
 * icon when the page is not built (then the host's pages are plain HTML, and still work).
 */
export async function pageStyleLinks(webRoot: string): Promise<string> {
  const icon = '<link rel="icon" href="/favicon.svg" type="image/svg+xml">';
  let index: string;
  try {
    index = await readFile(join(webRoot, 'index.html'), 'utf8');
  } catch {
    return icon;
  }
  const sheets: string[] = [];
  for (const tag of index.match(/<link\b[^>]*>/g) ?? []) {
    if (!/\brel="stylesheet"/.test(tag)) continue;
    const href = /\bhref="([^"]+)"/.exec(tag)?.[1];
    if (href !== undefined && ASSET_CSS.test(href)) sheets.push(`<link rel="stylesheet" href="${href}">`);
  }
  return icon + sheets.join('');
}
