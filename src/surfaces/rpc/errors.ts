import {
  ERROR_TABLE,
  isSluiceError,
  isTransientStoreError,
  oneLine,
  type SluiceErrorCode,
} from '../../core/errors.js';
import { asStoreFault } from '../../core/store-faults.js';

/** JSON-RPC 2.0's own codes. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

/**
 * One JSON-RPC code per Sluice error code, read from core's ERROR_TABLE (documented in
 * docs/rpc.md); `error.data.code` carries the string code as well, so clients can switch on either.
 */
export const RPC_CODE_FOR: Readonly<Record<SluiceErrorCode, number>> = Object.fromEntries(
  Object.entries(ERROR_TABLE).map(([code, rendering]) => [code, rendering.rpc]),
) as Record<SluiceErrorCode, number>;

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

/**
 * A failure the caller is told about in its own words: a host error with a code, or a protocol
 * refusal. Anything else is a bug (or a store fault) for the log. Classified by class, not by name.
 */
export function isExpectedFailure(err: unknown): boolean {
  return err instanceof RpcFailure || isSluiceError(err);
}

/** Maps anything thrown by a handler to a wire error; bugs become a generic internal error. */
export function toRpcError(thrown: unknown): RpcError {
  const err = asStoreFault(thrown);
  if (err instanceof RpcFailure) return { ...err.rpc, message: oneLine(err.rpc.message) };
  if (isSluiceError(err)) {
    return {
      code: RPC_CODE_FOR[err.code],
      message: oneLine(err.message),
      data: { ...(err.data ?? {}), code: err.code },
    };
  }
  if (isTransientStoreError(err)) {
    return {
      code: RPC_CODE_FOR.unavailable,
      message: 'the database is busy; try again',
      data: { code: 'unavailable' },
    };
  }
  return { code: INTERNAL_ERROR, message: 'internal error', data: { code: 'internal' } };
}
