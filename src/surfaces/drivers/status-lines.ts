import { REPEATED_FAILURE_KIND, type TurnReport } from '../../host/turns/index.js';

/** The terminal line for a turn: outcome, counts, the first ids, duration. */
export function turnStatusLine(agent: string, r: TurnReport, at: Date = new Date()): string {
  const time = at.toISOString().slice(11, 19);
  const ids =
    r.delivered.length === 0
      ? ''
      : ` [${r.delivered.slice(0, 3).join(' ')}${r.delivered.length > 3 ? ' …' : ''}]`;
  const outcome = r.outcome === 'failed' ? `failed (${r.failureKind})` : r.outcome;
  const seconds = (r.durationMs / 1000).toFixed(1);
  return `${time} ${agent} ${r.turnId} ${outcome}: ${r.delivered.length} delivered${ids}, ${r.handled.length} handled, ${r.returned.length} returned, ${seconds}s`;
}

/** The terminal line for a steer: which turn, how many messages, whether the client took them. */
export function steerStatusLine(
  agent: string,
  turnId: string,
  ids: readonly string[],
  accepted: boolean,
  at: Date = new Date(),
): string {
  const shown = `[${ids.slice(0, 3).join(' ')}${ids.length > 3 ? ' …' : ''}]`;
  const what = accepted ? 'steered' : 'steer refused, next turn';
  return `${at.toISOString().slice(11, 19)} ${agent} ${turnId} ${what}: ${ids.length} message(s) ${shown}`;
}

/** The terminal line for a message returned because its turns kept ending without settling. */
export function returnedStatusLine(
  agent: string,
  returned: { id: string; reason: string },
  at: Date = new Date(),
): string {
  return `${at.toISOString().slice(11, 19)} ${agent} returned ${returned.id} (${REPEATED_FAILURE_KIND}): ${returned.reason}; resume or withdraw it to go on`;
}

/** The terminal line for a model error the client reported mid-turn (it may still be retrying). */
export function modelErrorStatusLine(
  agent: string,
  error: { message: string; willRetry: boolean },
  retryLimitMs: number,
  at: Date = new Date(),
): string {
  const next = error.willRetry
    ? `codex retries; the driver gives up after ${Math.round(retryLimitMs / 1000)} s`
    : 'the turn fails';
  return `${at.toISOString().slice(11, 19)} ${agent} model error: ${error.message} (${next})`;
}

// Reading the lines back: a supervised driver's stdout is how `sluice serve` learns where it
// stands (src/surfaces/agents/supervisor.ts), so the lines' shapes are parsed here, beside the
// functions that write them. Agent names hold no spaces.

/** The driver's ready line: its client answered and the loop runs. */
export function isReadyLine(line: string): boolean {
  return /^sluice drive (claude|codex): \S+ ready \(/.test(line);
}

/** The model error a {@link modelErrorStatusLine} reports, else undefined. */
export function modelErrorOfLine(line: string): string | undefined {
  return /^\d\d:\d\d:\d\d \S+ model error: (.*) \((codex retries; .*|the turn fails)\)$/.exec(line)?.[1];
}

/** True for the {@link turnStatusLine} of a turn that succeeded (the model answered). */
export function isTurnOkLine(line: string): boolean {
  return /^\d\d:\d\d:\d\d \S+ \S+ ok: \d+ delivered/.test(line);
}

/**
 * The terminal line when the database stops answering the driver: once per outage (each retry
 * goes to the log only). The driver keeps its client session and retries.
 */
export function databaseUnavailableStatusLine(agent: string, error: string, at: Date = new Date()): string {
  return `${at.toISOString().slice(11, 19)} ${agent} database unavailable, retrying: ${error}`;
}

/** The terminal line when the database answers the driver again after an outage. */
export function databaseBackStatusLine(agent: string, downMs: number, at: Date = new Date()): string {
  return `${at.toISOString().slice(11, 19)} ${agent} database back after ${(downMs / 1000).toFixed(1)}s`;
}
