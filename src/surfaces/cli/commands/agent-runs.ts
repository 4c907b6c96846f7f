import { realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import {
  type AgentRunView,
  agentRunStatus,
  controlAgentRun,
  forgetAgentRun,
  type RunAction,
  registerAgentRun,
  runStateLabel,
} from '../../../host/agents/index.js';
import type { HostContext, Principal } from '../../../host/identity/index.js';
import { runLogPath } from '../../agents/run-log.js';
import { waitForStart } from '../../agents/run-wait.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';

// `sluice agent run|start|stop|restart|forget` (docs/agents.md): host-run agents from the CLI. The
// spec (what runs, in which folder) is registered here only, by someone on the machine.

/** The folder a run works in: it must exist and be a folder; stored as its real path. */
function runFolder(dir: string): string {
  const path = resolve(dir);
  try {
    if (!statSync(path).isDirectory()) throw new Error('not a folder');
    return realpathSync(path);
  } catch {
    throw new SluiceError('invalid_params', `--cwd ${dir} is not a folder`);
  }
}

/** How long `agent stop` waits for the host to stop the driver, and any command for a host to act. */
const HOST_WAIT_MS = 5000;
/** How long `agent run|start|restart` waits for a started driver to be ready or to crash. */
const READY_WAIT_MS = 15_000;

/**
 * Waits (polling the store: the supervisor lives in another process) until the run reaches a state
 * `done` accepts, or the deadline; returns the last view.
 */
async function waitForState(
  host: HostContext,
  caller: Principal,
  agent: string,
  done: (view: AgentRunView) => boolean,
  waitMs: number,
): Promise<AgentRunView | null> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const view = await agentRunStatus(host, caller, agent);
    if (view === null || done(view) || Date.now() >= deadline) return view;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const noHostLine = (agent: string) =>
  `no sluice serve runs for this home yet: start it (npm start, or sluice serve) and it starts ${agent}`;

/**
 * Waits for a driver the host was asked to start and prints where it stands: running, still
 * starting at the bound, or no host. A crash is the command's failure: one line with the driver's
 * own error line (`unavailable`, exit 1), so a script or a person never takes it for a start.
 */
async function reportStart(
  host: HostContext,
  caller: Principal,
  agent: string,
  request: { since: string; restartsBefore: number },
): Promise<void> {
  const log = runLogPath(host.home, agent);
  const outcome = await waitForStart({
    read: () => agentRunStatus(host, caller, agent),
    ...request,
    waitMs: READY_WAIT_MS,
    hostWaitMs: HOST_WAIT_MS,
  });
  switch (outcome.kind) {
    case 'gone':
      return writeOut(`${agent} has no run spec any more\n`);
    case 'no-host':
      return writeOut(`${noHostLine(agent)}\n`);
    case 'running':
      return writeOut(`${agent} is running (pid ${outcome.run.pid}); log: ${log}\n`);
    case 'still-starting':
      return writeOut(
        `${agent} is still starting after ${READY_WAIT_MS / 1000} s (pid ${outcome.run.pid}): sluice agent ls shows when it is running; log: ${log}\n`,
      );
    case 'crashed':
      throw new SluiceError(
        'unavailable',
        `${agent} crashed: ${outcome.run.lastError ?? 'exited before it was ready'}; the host restarts it with a growing delay (log: ${log}; sluice agent stop ${agent} stops it)`,
      );
  }
}

/** The run's restart count before a request (0 without a spec): a higher one later is a crash. */
async function restartsOf(host: HostContext, caller: Principal, agent: string): Promise<number> {
  // A name with no agent yet (agent run adds it), or a refusal the registration repeats: none.
  return (await agentRunStatus(host, caller, agent).catch(() => null))?.restarts ?? 0;
}

/** Registers run, start, stop, restart and forget under the existing `agent` command. */
export function registerAgentRunCommands(program: Command): void {
  const agent = program.commands.find((c) => c.name() === 'agent');
  if (!agent) throw new Error('the agent command is registered first (commands/setup.ts)');

  agent
    .command('run <name>')
    .description(
      'run an agent from this machine: the running sluice serve starts sluice drive for it, restarts it when it exits, and stops it with the host',
    )
    .requiredOption('--driver <client>', 'claude (Claude Code) or codex')
    .requiredOption('--cwd <dir>', 'the project folder the client works in')
    .option('--no-wait', 'do not wait for the host to start it')
    .argument('[clientArgs...]', 'extra arguments for claude (after --)')
    .addHelpText(
      'after',
      '\nExamples:\n  sluice agent run helper --driver claude --cwd ~/src/app\n  sluice agent run reviewer --driver codex --cwd ~/src/app\n  sluice agent run helper --driver claude --cwd ~/src/app -- --model claude-sonnet-4-5',
    )
    .action(
      action(
        async (
          { host, actor },
          name: string,
          clientArgs: string[],
          opts: { driver: string; cwd: string; wait?: boolean },
        ) => {
          if (opts.driver !== 'claude' && opts.driver !== 'codex')
            throw new SluiceError('invalid_params', `--driver must be claude or codex, not ${opts.driver}`);
          if (opts.driver === 'codex' && clientArgs.length > 0)
            throw new SluiceError(
              'invalid_params',
              'extra client arguments (after --) are for claude only: sluice drive codex takes none',
            );
          const cwd = runFolder(opts.cwd);
          const caller = await actor();
          const restartsBefore = await restartsOf(host, caller, name);
          const since = host.now().toISOString();
          const { created, settled } = await registerAgentRun(host, caller, {
            name,
            driver: opts.driver,
            cwd,
            args: clientArgs,
          });
          const lines: string[] = [];
          if (created) lines.push(`added agent ${name} (settles by turns)`);
          if (settled) lines.push(`${name} now settles by turns: each driven turn settles what it delivered`);
          lines.push(`${name} runs sluice drive ${opts.driver} in ${cwd}, supervised by sluice serve`);
          await writeOut(`${lines.join('\n')}\n`);
          if (opts.wait !== false) await reportStart(host, caller, name, { since, restartsBefore });
        },
      ),
    );

  const control = (act: RunAction, description: string) =>
    agent
      .command(`${act} <name>`)
      .description(description)
      .option('--no-wait', 'do not wait for the host to act')
      .action(
        action(async ({ host, actor }, name: string, opts: { wait?: boolean }) => {
          const caller = await actor();
          const before = await agentRunStatus(host, caller, name);
          if (act === 'start' && (before?.state === 'running' || before?.state === 'starting')) {
            await writeOut(`${name} is already ${before.state} (pid ${before.pid})\n`);
            return;
          }
          const since = host.now().toISOString();
          await controlAgentRun(host, caller, name, act);
          if (opts.wait === false) {
            await writeOut(`asked ${name} to ${act}\n`);
            return;
          }
          if (act !== 'stop') {
            await reportStart(host, caller, name, { since, restartsBefore: before?.restarts ?? 0 });
            return;
          }
          const view = await waitForState(host, caller, name, (v) => v.state === 'stopped', HOST_WAIT_MS);
          if (view?.state === 'stopped' || view?.state === 'no-host') {
            await writeOut(`${name} is stopped (sluice agent start ${name} starts it again)\n`);
            return;
          }
          await writeOut(
            `${view === null ? `${name} has no run spec any more` : `${name} is ${runStateLabel(view)}`}\n`,
          );
        }),
      );
  control('start', 'start a host-run agent again (sluice agent run registered it)');
  control('stop', 'stop a host-run agent (it stays registered; start starts it again)');
  control('restart', 'restart a host-run agent now');

  agent
    .command('forget <name>')
    .description('stop running an agent from the host and remove its run spec (the agent and its inbox stay)')
    .action(
      action(async ({ host, actor }, name: string) => {
        await forgetAgentRun(host, await actor(), name);
        await writeOut(`${name} is no longer run by the host\n`);
      }),
    );
}
