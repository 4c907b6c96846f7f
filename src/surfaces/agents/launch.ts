import { spawn } from 'node:child_process';
import type { HeldRun } from '../../host/agents/index.js';
import type { SluiceLauncher } from '../hooks/install-files.js';
import type { ChildOutput, LaunchRun, RunChild } from './supervisor.js';

/**
 * Set in a supervised driver's environment: the driver exits when its stdin (a pipe from the host)
 * closes, so a host that dies — even by SIGKILL — leaves no driver running (cli/commands/drive.ts).
 */
export const SUPERVISED_ENV = 'SLUICE_SUPERVISED';

/** The command line of a run's driver: `sluice --home H drive DRIVER --as AGENT --cwd DIR [-- ARGS]`. */
export function driveCommand(launcher: SluiceLauncher, home: string, run: HeldRun): string[] {
  return [
    launcher.bin,
    '--home',
    home,
    'drive',
    run.driver,
    '--as',
    run.agent,
    '--cwd',
    run.cwd,
    ...(run.args.length > 0 ? ['--', ...run.args] : []),
  ];
}

/** Calls `line` for every complete line of a stream's text chunks. */
function lineSplitter(line: (text: string) => void): (chunk: string) => void {
  let buffer = '';
  return (chunk) => {
    buffer += chunk;
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      line(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
    }
    // A runaway line without a newline is not kept whole: only its end matters.
    if (buffer.length > 64 * 1024) buffer = buffer.slice(-4096);
  };
}

/**
 * Starts drivers as child processes of this host: this Node and this installation's bin/sluice.js,
 * in their own process group (a kill takes the client and its MCP servers too), with the database
 * URL in the environment (`SLUICE_DB`), never on the command line where `ps` shows it.
 */
export function processLauncher(options: {
  launcher: SluiceLauncher;
  home: string;
  db?: string | undefined;
  env?: NodeJS.ProcessEnv;
}): LaunchRun {
  return (run: HeldRun, output: ChildOutput): RunChild => {
    const env: NodeJS.ProcessEnv = { ...(options.env ?? process.env), [SUPERVISED_ENV]: '1' };
    delete env.SLUICE_AS;
    if (options.db !== undefined) env.SLUICE_DB = options.db;
    const child = spawn(options.launcher.node, driveCommand(options.launcher, options.home, run), {
      cwd: run.cwd,
      env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      child.on('error', (err) => {
        output.errorLine(`could not start the driver: ${err.message}`);
        resolve({ code: null, signal: null });
      });
      child.on('close', (code, signal) => resolve({ code, signal }));
    });
    child.stdin.on('error', () => {
      // the driver went away; `exited` says so
    });
    const outLines = lineSplitter(output.outLine);
    const errLines = lineSplitter(output.errorLine);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output.log(chunk);
      outLines(chunk);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      output.log(chunk);
      errLines(chunk);
    });
    const signal = (sig: NodeJS.Signals, group: boolean) => {
      if (child.pid === undefined) return;
      try {
        process.kill(group ? -child.pid : child.pid, sig);
      } catch {
        // gone already
      }
    };
    return {
      pid: child.pid,
      exited,
      terminate: () => signal('SIGTERM', false),
      kill: () => signal('SIGKILL', true),
    };
  };
}
