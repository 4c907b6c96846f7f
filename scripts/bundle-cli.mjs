// Bundles the compiled CLI (dist/src/surfaces/cli/main.js) into dist/cli/: one chunk per command
// module plus shared chunks, with Kysely and commander inside. Loading Kysely's 265 ES modules
// one by one cost more CPU than everything a `sluice message …` command does; one file costs a
// tenth of that (docs/cli.md, bench/cli-start.ts). bin/sluice.js uses the bundle only when it is
// as new as the compiled sources, so a plain `tsc` never runs stale code.
import { renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist/cli');

// Pure JavaScript on the hot path is bundled; everything else (native addons such as
// better-sqlite3 and sharp, and the server, MCP and bridge packages that only some commands
// load) stays an ordinary import from node_modules. zod stays outside too: the MCP SDK checks
// our tool schemas with its own copy, so there must be only one.
const BUNDLED = new Set(['kysely', 'commander']);

function packageOf(id) {
  const parts = id.split('/');
  return id.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

// Built beside and swapped in with two renames, so a CLI started during a build (other
// terminals, a test run) finds the old bundle or the new one, never half of one.
const fresh = `${out}-${process.pid}`;
await build({
  input: { main: join(root, 'dist/src/surfaces/cli/main.js') },
  platform: 'node',
  logLevel: 'warn',
  external: (id) => {
    if (id.startsWith('.') || id.startsWith('/') || id.startsWith('\0')) return false;
    return id.startsWith('node:') || !BUNDLED.has(packageOf(id));
  },
  output: {
    dir: fresh,
    format: 'esm',
    // Stable names: a running `sluice serve` that loads a chunk after a rebuild finds it.
    chunkFileNames: '[name].js',
    // Less text to parse; names are kept so a stack in <home>/logs/errors.log still reads, and
    // the source maps beside the chunks give the lines.
    minify: { compress: true, mangle: false },
    sourcemap: true,
  },
});
const old = `${out}-old-${process.pid}`;
try {
  renameSync(out, old);
} catch (err) {
  if (err.code !== 'ENOENT') throw err;
}
renameSync(fresh, out);
rmSync(old, { recursive: true, force: true });
