import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
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
 * Why a run's folder cannot be the driver's working directory, or undefined when it can. Node
 * reports a missing cwd as `spawn …/node ENOENT`, which reads as a missing Node, so the folder is
 * checked first and the crash line names it.
 */
export function runFolderProblem(cwd: string): string | undefined {
  const fix = 'moved or removed since `agent run`? create it again, or register the agent again with --cwd';
  try {
    if (statSync(cwd).isDirectory()) return undefined;
    return `the agent's folder ${cwd} is not a folder (${fix})`;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return `the agent's folder ${cwd} does not exist (${fix})`;
    return `the agent's folder ${cwd} cannot be used: ${(err as Error).message}`;
  }
}

/** A driver that never started: it reports `line` and has exited. */
function notStarted(line: string, output: ChildOutput): RunChild {
  output.errorLine(line);
  return {
    pid: undefined,
    exited: Promise.resolve({ code: null, signal: null }),
    terminate: () => {},
    kill: () => {},
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
  /**
   * The host's database as `databaseLocation` gives it (whether `--db` or `SLUICE_DB` named it),
   * or undefined for the home's own file.
   */
  db?: string | undefined;
  env?: NodeJS.ProcessEnv;
}): LaunchRun {
  return (run: HeldRun, output: ChildOutput): RunChild => {
    const folderProblem = runFolderProblem(run.cwd);
    if (folderProblem !== undefined) return notStarted(folderProblem, output);
    const env: NodeJS.ProcessEnv = { ...(options.env ?? process.env), [SUPERVISED_ENV]: '1' };
    delete env.SLUICE_AS;
    // Set to the host's own store, or left out for the home's file (the driver's `--home` names
    // it): an inherited value, e.g. a relative path, must not send the driver to another store.
    if (options.db !== undefined) env.SLUICE_DB = options.db;
    else delete env.SLUICE_DB;
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
