import { SluiceError } from '../../core/errors.js';

/**
 * How long the driver lets Codex retry a model it cannot reach before it interrupts the turn and
 * returns its messages (`model_error`). Codex 0.171 retries a refused connection without end
 * ("Reconnecting... waiting for network", `willRetry: true`) and never ends the turn, so without a
 * bound the messages would sit `received` for as long as the network stays down.
 */
export const DEFAULT_CODEX_RETRY_LIMIT_MS = 180_000;

/** The environment variable that sets {@link DEFAULT_CODEX_RETRY_LIMIT_MS} otherwise (milliseconds). */
export const CODEX_RETRY_LIMIT_ENV = 'SLUICE_CODEX_RETRY_LIMIT_MS';

/** The retry bound from `$SLUICE_CODEX_RETRY_LIMIT_MS`, else the default; a bad value is refused. */
export function codexRetryLimitMs(env: NodeJS.ProcessEnv): number {
  const raw = env[CODEX_RETRY_LIMIT_ENV];
  if (raw === undefined || raw === '') return DEFAULT_CODEX_RETRY_LIMIT_MS;
  if (!/^[1-9]\d{0,9}$/.test(raw))
    throw new SluiceError(
      'invalid_params',
      `${CODEX_RETRY_LIMIT_ENV} must be a whole number of milliseconds above 0, not ${JSON.stringify(raw)}`,
    );
  return Number(raw);
}

/** A model error Codex reported for a turn: its text, and whether Codex keeps trying. */
export interface CodexModelError {
  turnId: string | undefined;
  message: string;
  willRetry: boolean;
}

interface ErrorNotification {
  turnId?: unknown;
  willRetry?: unknown;
  error?: { message?: unknown; additionalDetails?: unknown } | null;
}

/**
 * The app-server's `error` notification as a {@link CodexModelError} (undefined for any other
 * notification): the message with Codex's details, e.g. "Reconnecting... waiting for network
 * (Connection failed: error sending request)".
 */
export function codexModelError(method: string, params: unknown): CodexModelError | undefined {
  if (method !== 'error') return undefined;
  const p = (params ?? {}) as ErrorNotification;
  const message = typeof p.error?.message === 'string' ? p.error.message : 'codex reported an error';
  const details = typeof p.error?.additionalDetails === 'string' ? p.error.additionalDetails : '';
  return {
    turnId: typeof p.turnId === 'string' ? p.turnId : undefined,
    message: details === '' ? message : `${message} (${details})`,
    willRetry: p.willRetry === true,
  };
}
