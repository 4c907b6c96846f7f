import { ERROR_TABLE, isSluiceError, oneLine, type SluiceErrorCode } from '../../core/errors.js';

/** HTTP status for each Sluice error code (the media and login routes answer in HTTP terms), from core's ERROR_TABLE. */
export const HTTP_STATUS_FOR: Readonly<Record<SluiceErrorCode, number>> = Object.fromEntries(
  Object.entries(ERROR_TABLE).map(([code, rendering]) => [code, rendering.http]),
) as Record<SluiceErrorCode, number>;

/** `{status, body}` for an error thrown by a host call; bugs are a bare 500. */
export function httpError(err: unknown): {
  status: number;
  body: { error: { code: string; message: string } };
} {
  if (isSluiceError(err)) {
    return {
      status: ERROR_TABLE[err.code].http,
      body: { error: { code: err.code, message: oneLine(err.message) } },
    };
  }
  return {
    status: ERROR_TABLE.internal.http,
    body: { error: { code: 'internal', message: 'internal error' } },
  };
}
