import { isSluiceError } from '../../core/errors.js';

/** HTTP status for each Sluice error code (the media and login routes answer in HTTP terms). */
export const HTTP_STATUS_FOR: Readonly<Record<string, number>> = {
  invalid_params: 400,
  invalid_cursor: 400,
  not_found: 404,
  not_member: 403,
  denied: 403,
  conflict: 409,
  too_large: 413,
  unavailable: 503,
  internal: 500,
};

/** `{status, body}` for an error thrown by a host call; bugs are a bare 500. */
export function httpError(err: unknown): {
  status: number;
  body: { error: { code: string; message: string } };
} {
  if (isSluiceError(err)) {
    return {
      status: HTTP_STATUS_FOR[err.code] ?? 500,
      body: { error: { code: err.code, message: err.message.replace(/[\r\n]+/g, ' ').slice(0, 500) } },
    };
  }
  return { status: 500, body: { error: { code: 'internal', message: 'internal error' } } };
}
