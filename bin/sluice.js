#!/usr/bin/env node
import { statSync } from 'node:fs';

// Everything Sluice creates (database, WAL, blobs, logs, materialised copies) is private to the
// user: other local users must not read messages or the cursor secret (docs/security.md).
// The user's own umask is kept for the agent clients `sluice drive` starts (they write the user's
// project files); the first sluice process in a chain records it.
const userUmask = process.umask(0o077);
process.env.SLUICE_USER_UMASK ??= userUmask.toString(8);
// The hook path runs on every prompt: it skips commander and the rest of the CLI graph (but
// `--help` is commander's, like on every other command).
const fast = !process.argv.slice(3).some((arg) => arg === '--help' || arg === '-h');
if (process.argv[2] === 'hook' && fast) {
  const { runHookCli } = await import('../dist/src/surfaces/hooks/hook-cli.js');
  await runHookCli(process.argv.slice(3));
} else if (process.argv[2] === 'wait' && fast) {
  // The wake runs after every Claude Code turn: like the hook, it skips the CLI graph.
  const { runWaitCli } = await import('../dist/src/surfaces/hooks/wait-cli.js');
  await runWaitCli(process.argv.slice(3));
} else {
  const { main } = await import(cliEntry());
  await main(process.argv);
}

// The bundle (scripts/bundle-cli.mjs, part of `npm run build`) starts in a fraction of the CPU of
// ~200 separate modules; it is used only when it is at least as new as the compiled sources, so
// a bare `tsc` run never leaves the CLI on stale code.
function cliEntry() {
  const compiled = new URL('../dist/src/surfaces/cli/main.js', import.meta.url);
  const bundled = new URL('../dist/cli/main.js', import.meta.url);
  const stat = (url) => statSync(url, { throwIfNoEntry: false })?.mtimeMs;
  const bundledAt = stat(bundled);
  return bundledAt !== undefined && bundledAt >= (stat(compiled) ?? 0) ? bundled.href : compiled.href;
}
