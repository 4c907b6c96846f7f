import type { Command } from 'commander';
import { runWaitCli } from '../../hooks/wait-cli.js';
import type { GlobalOptions } from '../context.js';

interface WaitOptions {
  for?: string;
  timeout?: string;
  hook?: boolean;
  session?: string;
}

/**
 * `sluice wait` for help and for global options written before the command (`sluice --home H
 * wait …`); `bin/sluice.js` runs `sluice wait …` straight through the fast path in wait-cli.ts.
 */
export function registerWaitCommand(program: Command): void {
  program
    .command('wait')
    .description(
      'block until the agent has mail it was not woken for, then print the bounded delivery (Claude: exit 2 wakes the session)',
    )
    .option('--for <client>', 'claude or codex: that client’s cap and wake convention')
    .option('--timeout <seconds>', 'end quietly (exit 0, nothing printed) after this many seconds')
    .option(
      '--hook',
      'run as Claude Code’s asyncRewake hook (payload on stdin; only in interactive sessions)',
    )
    .option('--session <key>', 'remember under this key what was already woken for')
    .action(async (opts: WaitOptions, command: Command) => {
      const global = command.optsWithGlobals() as GlobalOptions;
      const argv: string[] = [];
      if (global.as !== undefined) argv.push('--as', global.as);
      if (global.home !== undefined) argv.push('--home', global.home);
      if (global.db !== undefined) argv.push('--db', global.db);
      if (opts.for !== undefined) argv.push('--for', opts.for);
      if (opts.timeout !== undefined) argv.push('--timeout', opts.timeout);
      if (opts.session !== undefined) argv.push('--session', opts.session);
      if (opts.hook) argv.push('--hook');
      await runWaitCli(argv);
    });
}
