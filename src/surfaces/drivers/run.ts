import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import type { DeliveryLimits } from '../../core/envelope.js';
import { SluiceError } from '../../core/errors.js';
import type { HostContext, Principal } from '../../host/identity/index.js';
import { requireTurnSettlement } from '../../host/turns/index.js';
import { type ApprovalEvent, approvalStatusLine } from './approvals.js';
import { startClaudeClient } from './claude.js';
import { requireClientVersion } from './client-version.js';
import { startCodexClient } from './codex.js';
import type { CodexApprovalPolicy } from './codex-approvals.js';
import { type CodexModelError, codexRetryLimitMs } from './codex-model-errors.js';
import { ClientGoneError, type DriverClient, runDriverLoop } from './loop.js';
import type { OutageEvent } from './outage.js';
import { findClientBinary, prepareDriver } from './setup.js';
import {
  databaseBackStatusLine,
  databaseUnavailableStatusLine,
  modelErrorStatusLine,
  returnedStatusLine,
  steerStatusLine,
  turnStatusLine,
} from './status-lines.js';

/** The client dying is an outcome to report in one line (its own stderr line), not a bug with a stack. */
function asClientFailure(err: unknown): unknown {
  return err instanceof ClientGoneError ? new SluiceError('unavailable', err.message) : err;
}

export interface DriveOptions {
  client: 'claude' | 'codex';
  cwd: string;
  db?: string | undefined;
  limits?: Partial<DeliveryLimits> | undefined;
  /** Extra arguments for `claude` (after `--`). */
  extraArgs?: readonly string[] | undefined;
  sandbox?: 'workspace-write' | 'danger-full-access' | undefined;
  /** Codex only: when the client asks a person (docs/approvals.md). */
  approvalPolicy?: CodexApprovalPolicy | undefined;
  /** One line per turn for the terminal. */
  status: (line: string) => void;
  /** Whether this driver still holds the agent, asked before each turn (DriverLoopOptions.confirmHold). */
  confirmHold?: (() => Promise<boolean>) | undefined;
}

/** `<home>/logs/drive-<agent>.log`: one JSON line per turn (pino). */
export function driveLogPath(home: string, agent: string): string {
  return join(home, 'logs', `drive-${agent}.log`);
}

/**
 * Runs `sluice drive claude|codex` until SIGINT/SIGTERM or the client exits. Stopping abandons a
 * turn in flight (nothing is consumed); so does a driver that is killed, on its next start.
 */
export async function drive(ctx: HostContext, agent: Principal, options: DriveOptions): Promise<void> {
  requireTurnSettlement(agent);
  const retryLimitMs = codexRetryLimitMs(options.client === 'codex' ? process.env : {});
  const bin = findClientBinary(options.client);
  const setup = await prepareDriver(ctx, agent, { db: options.db, cwd: options.cwd });
  const logPath = driveLogPath(ctx.home, agent.name);
  mkdirSync(join(ctx.home, 'logs'), { recursive: true, mode: 0o700 });
  const log = pino(
    { base: { agent: agent.name, client: options.client } },
    pino.destination({ dest: logPath, sync: true, mode: 0o600 }),
  );
  const version = await requireClientVersion(options.client, bin, setup.env);
  // Each request for permission: one log line and one terminal line (who to ask, what was answered).
  const onApproval = (event: ApprovalEvent) => {
    log.info(
      {
        event: `approval_${event.phase}`,
        approval: event.approvalId,
        kind: event.ask.kind,
        decision: event.answer?.decision,
        by: event.answer?.by,
        reused: event.reused,
      },
      event.phase === 'waiting' ? 'waiting for a person' : 'approval answered',
    );
    options.status(approvalStatusLine(agent.name, event));
  };
  // Every model error goes to the log; the terminal gets the first of each run of retries (Codex
  // repeats "Reconnecting..." every few seconds) and the one that ends the turn.
  let retrying = false;
  const onModelError = (error: CodexModelError) => {
    log.warn(
      { event: 'model_error', turn: error.turnId, error: error.message, willRetry: error.willRetry },
      'codex reports a model error',
    );
    if (!retrying || !error.willRetry) options.status(modelErrorStatusLine(agent.name, error, retryLimitMs));
    retrying = error.willRetry;
  };
  let client: DriverClient;
  try {
    client =
      options.client === 'claude'
        ? await startClaudeClient(ctx, agent, setup, {
            bin,
            cwd: options.cwd,
            extraArgs: options.extraArgs ?? [],
            onApproval,
          })
        : await startCodexClient(ctx, agent, setup, {
            bin,
            cwd: options.cwd,
            sandbox: options.sandbox ?? 'workspace-write',
            approvalPolicy: options.approvalPolicy,
            onApproval,
            onModelError,
            retryLimitMs,
          });
  } catch (err) {
    log.error(
      { event: 'start_failed', error: err instanceof Error ? err.message : String(err) },
      'client failed to start',
    );
    throw asClientFailure(err);
  }
  // The database going away is waited out (loop.ts): every failed attempt to the log, one terminal
  // line when it begins and one when it ends, never a stack.
  const onOutage = (event: OutageEvent) => {
    if (event.phase === 'back') {
      log.info({ event: 'database_back', downMs: event.downMs }, 'database answers again');
      options.status(databaseBackStatusLine(agent.name, event.downMs));
      return;
    }
    log.warn(
      {
        event: 'database_unavailable',
        error: event.error,
        attempt: event.attempt,
        retryInMs: event.retryInMs,
      },
      'database unavailable, retrying',
    );
    if (event.attempt === 1) options.status(databaseUnavailableStatusLine(agent.name, event.error));
  };
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  log.info({ event: 'start', bin, version, cwd: options.cwd, session: client.sessionKey }, 'driver started');
  try {
    await runDriverLoop(ctx, agent, client, {
      limits: options.limits,
      signal: stop.signal,
      onOutage,
      confirmHold: options.confirmHold,
      onStart: ({ abandoned }) => {
        if (abandoned)
          log.info({ event: 'abandoned', turn: abandoned }, 'abandoned a turn left open by a dead driver');
        options.status(
          `sluice drive ${options.client}: ${agent.name} ready (log ${logPath})${abandoned ? `; abandoned stale turn ${abandoned}` : ''}`,
        );
      },
      onTurn: (report) => {
        retrying = false;
        log.info({ event: 'turn', ...report }, 'turn settled');
        // Claude ends a turn on a model error (Codex reported its own above): the same line, so a
        // supervisor shows it as the agent's model error (docs/agents.md).
        if (options.client === 'claude' && report.failureKind === 'model_error')
          options.status(
            modelErrorStatusLine(
              agent.name,
              { message: report.reason ?? 'the model failed', willRetry: false },
              0,
            ),
          );
        options.status(turnStatusLine(agent.name, report));
      },
      onSteer: ({ turnId, ids, accepted }) => {
        log.info({ event: 'steer', turn: turnId, messages: ids, accepted }, 'steered a running turn');
        options.status(steerStatusLine(agent.name, turnId, ids, accepted));
      },
      onReturned: (returned) => {
        for (const r of returned) {
          log.warn({ event: 'returned', message: r.id, reason: r.reason }, 'returned after unsettled turns');
          options.status(returnedStatusLine(agent.name, r));
        }
      },
    });
  } catch (err) {
    log.error(
      { event: 'stopped', error: err instanceof Error ? err.message : String(err) },
      'driver stopped',
    );
    throw asClientFailure(err);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await client.stop();
    log.info({ event: 'stop' }, 'driver stopped');
    log.flush();
  }
}
