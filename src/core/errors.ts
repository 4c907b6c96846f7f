/**
 * Local error family: a stable string code and one human line. Surfaces map codes to exit codes,
 * JSON-RPC codes or MCP error results; a user never sees a stack trace for one of these.
 */
export type SluiceErrorCode =
  | 'invalid_params'
  | 'invalid_cursor'
  | 'not_found'
  | 'not_member'
  | 'denied'
  | 'conflict'
  | 'too_large'
  | 'unavailable'
  | 'internal';

export class SluiceError extends Error {
  readonly code: SluiceErrorCode;
  readonly data: Record<string, unknown> | undefined;

  constructor(code: SluiceErrorCode, message: string, data?: Record<string, unknown>) {
    super(message);
    this.name = 'SluiceError';
    this.code = code;
    this.data = data;
  }
}

/** True for errors that carry a user-facing code (as opposed to bugs). */
export function isSluiceError(err: unknown): err is SluiceError {
  return err instanceof SluiceError;
}
