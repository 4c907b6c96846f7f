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

// Pure JavaScript on the hot path is bundled, better-sqlite3's wrapper included (its addon is
// loaded from its package, below); everything else (sharp, and the server, MCP and bridge
// packages that only some commands load) stays an ordinary import from node_modules. zod stays
// outside too: the MCP SDK checks our tool schemas with its own copy, so there must be only one.
const BUNDLED = new Set(['kysely', 'commander', 'better-sqlite3']);

// better-sqlite3 finds its addon through the `bindings` package, which probes a dozen paths from
// the caller's stack; bundled, it loads build/Release/better_sqlite3.node from the installed
// package directly (what `bindings` finds for an npm install), and falls back to `bindings`.
// Together with its 14 wrapper files this saved ~7 ms of CPU per command (docs/cli.md).
const ADDON_LOOKUP = "require('bindings')('better_sqlite3.node')";
const ADDON_DIRECT =
  "(() => { const p = require('node:path'); try { return require(p.join(p.dirname(require.resolve('better-sqlite3/package.json')), 'build', 'Release', 'better_sqlite3.node')); } catch { return require('bindings')('better_sqlite3.node'); } })()";
const betterSqliteAddon = {
  name: 'better-sqlite3-addon',
  transform(code, id) {
    if (!/better-sqlite3[\\/]lib[\\/]database\.js$/.test(id)) return null;
    // A new better-sqlite3 that finds its addon another way fails the build, never the CLI.
    if (!code.includes(ADDON_LOOKUP)) throw new Error(`${id} no longer has ${ADDON_LOOKUP}`);
    return code.replace(ADDON_LOOKUP, ADDON_DIRECT);
  },
};

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
  plugins: [betterSqliteAddon],
  // The addon swap keeps every line where it was, so the maps stay right.
  checks: { sourcemapBroken: false },
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
