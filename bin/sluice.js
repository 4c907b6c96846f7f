#!/usr/bin/env node
// The hook path runs on every prompt: it skips commander and the rest of the CLI graph.
if (process.argv[2] === 'hook') {
  const { runHookCli } = await import('../dist/src/surfaces/hooks/hook-cli.js');
  await runHookCli(process.argv.slice(3));
} else {
  const { main } = await import('../dist/src/surfaces/cli/main.js');
  await main(process.argv);
}
