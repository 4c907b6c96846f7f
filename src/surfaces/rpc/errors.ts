import { isSluiceError, type SluiceErrorCode } from '../../core/errors.js';

/** JSON-RPC 2.0's own codes. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

/**
 * One JSON-RPC code per Sluice error code (documented in docs/rpc.md); `error.data.code` carries
 * the string code as well, so clients can switch on either.
 */
export const RPC_CODE_FOR: Readonly<Record<SluiceErrorCode, number>> = {
  invalid_params: INVALID_PARAMS,
  invalid_cursor: -32010,
  not_found: -32004,
  not_member: -32003,
  denied: -32001,
  conflict: -32009,
  too_large: -32013,
  unavailable: -32050,
  internal: INTERNAL_ERROR,
};

/** A wire error: numeric code, one line, and a `data` object with the string code. */
export interface RpcError {
  code: number;
  message: string;
  data: { code: string; [key: string]: unknown };
}

/** Thrown inside the RPC layer for protocol-level failures (bad request shape, unknown method). */
export class RpcFailure extends Error {
  readonly rpc: RpcError;
  constructor(code: number, dataCode: string, message: string, extra: Record<string, unknown> = {}) {
    super(message);
    this.rpc = { code, message, data: { ...extra, code: dataCode } };
  }
}

const MAX_MESSAGE_CHARS = 500;

/** Maps anything thrown by a handler to a wire error; bugs become a generic internal error. */
export function toRpcError(err: unknown): RpcError {
  if (err instanceof RpcFailure) return { ...err.rpc, message: oneLine(err.rpc.message) };
  if (isSluiceError(err)) {
    return {
      code: RPC_CODE_FOR[err.code],
      message: oneLine(err.message),
      data: { ...(err.data ?? {}), code: err.code },
    };
  }
  const e = err as { code?: unknown } | null;
  if (e && (e.code === 'SQLITE_BUSY' || e.code === 'ECONNREFUSED')) {
    return {
      code: RPC_CODE_FOR.unavailable,
      message: 'the database is busy; try again',
      data: { code: 'unavailable' },
    };
  }
  return { code: INTERNAL_ERROR, message: 'internal error', data: { code: 'internal' } };
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').slice(0, MAX_MESSAGE_CHARS);
}
