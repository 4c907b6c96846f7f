import { ERROR_TABLE, isSluiceError, oneLine } from '../../core/errors.js';
import { asStoreFault } from '../../core/store-faults.js';

/** `{status, body}` for an error thrown by a host call; bugs are a bare 500. */
export function httpError(thrown: unknown): {
  status: number;
  body: { error: { code: string; message: string } };
} {
  const err = asStoreFault(thrown);
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
