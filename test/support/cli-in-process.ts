import { runCliInProcess } from '../../proof/fuzz-cli.js';
import type { CliResult } from './host.js';

/**
 * runCli without the process: the CLI's `main` runs in this one (proof/fuzz-cli.ts swaps in argv,
 * the environment, umask and the standard streams, and restores them), with the same environment
 * runCli gives the child (SLUICE_HOME the home, no SLUICE_AS, then `env`; an undefined value unsets
 * a variable) and `input` on stdin. About 10 ms against ~130 ms of CPU for a spawned CLI. Use it
 * where the process is not what is tested; the launcher, exit of a real process, signals and what
 * a shell passes on keep runCli.
 */
export async function runCliHere(
  args: readonly string[],
  options: { home: string; input?: string | Uint8Array; env?: Record<string, string | undefined> },
): Promise<CliResult> {
  const run = await runCliInProcess(
    args,
    { SLUICE_HOME: options.home, SLUICE_AS: '', ...options.env },
    options.input ?? '',
  );
  return { code: run.code, stdout: run.stdout.toString('utf8'), stderr: run.stderr };
}
