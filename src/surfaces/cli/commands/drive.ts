import { resolve } from 'node:path';
import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import { type HeldDriver, holdDriver } from '../../../host/agents/index.js';
import { databaseLocation, type HostContext, type Principal } from '../../../host/identity/index.js';
import { requireAgent } from '../../../host/queue/index.js';
import { requireTurnSettlement } from '../../../host/turns/index.js';
import { DEFAULT_CODEX_APPROVAL_POLICY } from '../../drivers/codex.js';
import { CODEX_APPROVAL_POLICIES } from '../../drivers/codex-approvals.js';
import { drive } from '../../drivers/run.js';
import { findClientBinary } from '../../drivers/setup.js';
import { isBroadFolder } from '../agent-lock.js';
import { action } from '../context.js';
import { parseLimit } from '../io.js';

interface DriveFlags {
  cwd?: string;
  maxMessages?: string;
  maxBytes?: string;
  sandbox?: string;
  approvalPolicy?: string;
}

/**
 * The client session's working directory. The model may read files there with its client's own
 * tools, so the home folder or anything above it is refused unless the user names it with --cwd
 * (and even then nothing there is attachable: agent-lock.ts isBroadFolder).
 */
function sessionCwd(flags: DriveFlags): string {
  const cwd = resolve(flags.cwd ?? process.cwd());
  if (flags.cwd === undefined && isBroadFolder(cwd)) {
    throw new SluiceError(
      'invalid_params',
      `refusing to drive from ${cwd}: the model could read every file under it; run it from a project folder or pass --cwd DIR`,
    );
  }
  return cwd;
}

/**
 * A driver the host supervises (SLUICE_SUPERVISED, surfaces/agents/launch.ts) reads nothing from
 * stdin, which is a pipe from the host: when it closes, the host is gone (even by SIGKILL), and the
 * driver stops as on SIGTERM rather than run on unsupervised. Returns the cleanup.
 */
function stopWithSupervisor(): () => void {
  if (process.env.SLUICE_SUPERVISED !== '1') return () => {};
  const gone = () => process.kill(process.pid, 'SIGTERM');
  process.stdin.on('end', gone);
  process.stdin.on('error', gone);
  process.stdin.resume();
  return () => {
    process.stdin.off('end', gone);
    process.stdin.off('error', gone);
    process.stdin.destroy();
  };
}

/** Runs a drive with the supervisor guard around it. */
async function guarded(run: () => Promise<void>): Promise<void> {
  const release = stopWithSupervisor();
  try {
    await run();
  } finally {
    release();
  }
}

/**
 * Runs the drive as the agent's only driver (docs/drivers.md, "One agent, one driver"): another
 * driver of the agent, anywhere on the store, refuses this one before anything is written or
 * started. A driver that loses the agent (its hold lapsed while the store was unreachable and
 * another took over) stops as on SIGTERM and exits with the refusal naming the new one; it learns
 * it at its next renewal or, at the latest, before its next turn (HeldDriver.confirm).
 */
async function asOnlyDriver(
  ctx: HostContext,
  agent: Principal,
  client: 'claude' | 'codex',
  run: (held: HeldDriver) => Promise<void>,
): Promise<void> {
  // What a driver would refuse anyway is refused before the agent is taken: nothing is written.
  requireTurnSettlement(agent);
  findClientBinary(client);
  const held = await holdDriver(
    ctx,
    agent,
    { client, pid: process.pid, supervised: process.env.SLUICE_SUPERVISED === '1' },
    {
      onLost: () => process.kill(process.pid, 'SIGTERM'),
      // Under sluice serve: one line in the agent's log while the other driver stops.
      onWait: (holder) =>
        process.stdout.write(
          `sluice drive ${client}: ${agent.name} waits for its other driver to stop: ${holder.message}\n`,
        ),
    },
  );
  try {
    await run(held);
  } finally {
    try {
      await held.release();
    } catch {
      // The store is unreachable (I10): the hold lapses by itself, and at once for a driver on
      // this machine, since this pid is about to be gone.
    }
  }
  if (held.lost) throw held.lost;
}

function limitsFrom(flags: DriveFlags) {
  return {
    maxMessages: parseLimit(flags.maxMessages, '--max-messages', 1000, 16),
    maxBytes: parseLimit(flags.maxBytes, '--max-bytes', 1_000_000, 16_384),
  };
}

function withDriveOptions(command: Command): Command {
  return command
    .option('--cwd <dir>', 'working directory of the client session (default: here)')
    .option('--max-messages <n>', 'messages per delivery (default 16)')
    .option('--max-bytes <n>', 'UTF-8 bytes of the whole delivery text (default 16384)');
}

/** `sluice drive claude|codex --as AGENT`. */
export function registerDriveCommands(program: Command): void {
  const driveCommand = program
    .command('drive')
    .description(
      'run an agent session from its inbox: one bounded delivery per turn, settled by the outcome',
    );
  withDriveOptions(
    driveCommand
      .command('claude')
      .description(
        'drive a Claude Code session (claude -p, stream-json) for --as AGENT; extra claude args after --',
      )
      .argument('[claudeArgs...]', 'extra arguments for claude (after --)'),
  ).action(
    action(async ({ host, actor, global }, claudeArgs: string[], flags: DriveFlags) => {
      const agent = await actor();
      requireAgent(agent);
      const cwd = sessionCwd(flags);
      const limits = limitsFrom(flags);
      await guarded(() =>
        asOnlyDriver(host, agent, 'claude', (held) =>
          drive(host, agent, {
            client: 'claude',
            cwd,
            db: databaseLocation(global.db),
            limits,
            extraArgs: claudeArgs,
            status: (line) => process.stdout.write(`${line}\n`),
            confirmHold: () => held.confirm(),
          }),
        ),
      );
    }),
  );
  withDriveOptions(
    driveCommand
      .command('codex')
      .description('drive a Codex session (codex app-server) for --as AGENT')
      .option(
        '--sandbox <mode>',
        'shell sandbox: workspace-write (cwd + sluice home) or danger-full-access',
        'workspace-write',
      )
      .option(
        '--approval-policy <policy>',
        'when Codex asks a person (docs/approvals.md): on-request (to leave the sandbox), untrusted (every command outside its safe list: a tight allow-list) or never',
        DEFAULT_CODEX_APPROVAL_POLICY,
      ),
  ).action(
    action(async ({ host, actor, global }, flags: DriveFlags) => {
      const sandbox = flags.sandbox;
      if (sandbox !== 'workspace-write' && sandbox !== 'danger-full-access') {
        throw new SluiceError('invalid_params', '--sandbox must be workspace-write or danger-full-access');
      }
      const approvalPolicy = CODEX_APPROVAL_POLICIES.find((p) => p === flags.approvalPolicy);
      if (approvalPolicy === undefined)
        throw new SluiceError('invalid_params', '--approval-policy must be on-request, untrusted or never');
      const agent = await actor();
      requireAgent(agent);
      const cwd = sessionCwd(flags);
      const limits = limitsFrom(flags);
      await guarded(() =>
        asOnlyDriver(host, agent, 'codex', (held) =>
          drive(host, agent, {
            client: 'codex',
            approvalPolicy,
            cwd,
            db: databaseLocation(global.db),
            limits,
            sandbox,
            status: (line) => process.stdout.write(`${line}\n`),
            confirmHold: () => held.confirm(),
          }),
        ),
      );
    }),
  );
}
