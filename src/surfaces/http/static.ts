import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import type { FastifyInstance } from 'fastify';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

const MISSING_BUILD = `<!doctype html><meta charset="utf-8"><title>Sluice</title>
<h1>Sluice is running</h1><p>The web page is not built yet: run <code>npm run build</code> and reload.</p>
<p>JSON-RPC is at <code>/rpc</code> (WebSocket or POST); see docs/rpc.md.</p>`;

/** Paths that belong to the host's HTTP API, not to the page. */
const API_PREFIX = /^\/(rpc|mcp|media|healthz)(\/|\?|$)/;

/**
 * Serves the built web page from `root` (normally web/dist): files by path, `index.html` for `/`
 * and for page routes without an extension; a short page saying how to build when it is missing.
 */
export function registerStaticPage(app: FastifyInstance, root: string): void {
  const base = resolve(root);
  app.get('/*', async (req, reply) => {
    // The host's own routes are never page routes: a path under them that no route took (an id
    // too long for the router, a typo) is a coded 404, not the page with a 200.
    if (API_PREFIX.test(req.url)) {
      return reply.code(404).send({ error: { code: 'not_found', message: 'no such route' } });
    }
    const index = join(base, 'index.html');
    if (!existsSync(index)) return reply.type('text/html; charset=utf-8').send(MISSING_BUILD);
    let path: string;
    try {
      path = decodeURIComponent((req.url.split('?')[0] ?? '/').replace(/^\/+/, ''));
    } catch {
      return reply.code(400).send({ error: { code: 'invalid_params', message: 'bad path' } });
    }
    const target = normalize(join(base, path));
    const inside = target === base || target.startsWith(base + sep);
    const file = inside && existsSync(target) && statSync(target).isFile() ? target : undefined;
    if (!file) {
      if (extname(path) !== '')
        return reply.code(404).send({ error: { code: 'not_found', message: 'no such file' } });
      return reply
        .type(TYPES['.html'] as string)
        .header('cache-control', 'no-cache')
        .send(await readFile(index));
    }
    const type = TYPES[extname(file)] ?? 'application/octet-stream';
    const immutable = file.includes(`${sep}assets${sep}`);
    return reply
      .type(type)
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .send(await readFile(file));
  });
}
