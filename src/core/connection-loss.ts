import { SluiceError } from './errors.js';

/**
 * How a lost database connection looks, whoever meets it: the store's pool (which words it as
 * `unavailable`) and a driver waiting an outage out (src/surfaces/drivers/outage.ts). One list, so
 * both agree on what is weather.
 */

/** Socket-level codes of a server that is gone, restarting or unreachable. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs of a server that ended or refused the session: class 08 (connection exception),
 * admin/crash shutdown, "the database system is starting up / in recovery", too many connections,
 * and a hot standby that cannot write (a failover caught mid-way).
 */
function lostState(code: string): boolean {
  return (
    code.startsWith('08') ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    code === '53300' ||
    code === '25006'
  );
}

/** `pg`'s own messages for a connection that ended or cannot be used. */
const LOST_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
  'Client was closed and is not queryable',
];

/** True when `err` says the server or the connection is gone, not that the request was wrong. */
export function isConnectionLoss(err: unknown): boolean {
  if (err instanceof SluiceError) return false;
  let code: unknown;
  let message: unknown;
  try {
    ({ code, message } = (err ?? {}) as { code?: unknown; message?: unknown });
  } catch {
    // An error whose fields cannot be read (a hostile shape) says nothing about the connection.
    return false;
  }
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || lostState(code))) return true;
  return typeof message === 'string' && LOST_MESSAGES.some((m) => message.startsWith(m));
}
