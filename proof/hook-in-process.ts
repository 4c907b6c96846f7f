// `sluice hook …` in this process, for tests and campaigns that need many hook runs: kept apart
// from the fuzz campaign so that importing it loads only the hook's own small graph.
import { runHookCli } from '../src/surfaces/hooks/hook-cli.js';
import { runInThisProcess } from './in-process.js';

export interface HookRun {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/**
 * Runs `sluice hook <argv>` in this process through the entry the binary routes to
 * (`runHookCli`, which bin/sluice.js calls with the process's stdin), with `input` as stdin and
 * `env` overlaid on process.env (runInThisProcess sets up and restores the process). It costs no
 * process start-up, so it can afford many inputs; what only a real process shows (the pipe, the
 * routing in bin/sluice.js, the exit itself) is left to the spawned runs.
 */
export async function runHookInProcess(
  argv: readonly string[],
  input: string | Uint8Array,
  env: Record<string, string> = {},
): Promise<HookRun> {
  const run = await runInThisProcess(() => runHookCli(argv), { env, input });
  return {
    code: run.code,
    stdout: run.stdout.toString('utf8'),
    stderr: run.stderr.toString('utf8'),
    timedOut: false,
  };
}
