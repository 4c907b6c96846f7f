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
  | 'rate_limited'
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

/** How every surface reports one error code. */
export interface ErrorRendering {
  /** JSON-RPC `error.code` (docs/rpc.md); `error.data.code` carries the string code as well. */
  rpc: number;
  /** HTTP status where a route answers in HTTP terms (media, login). */
  http: number;
  /** CLI exit code (DESIGN.md §4: 1 usage/validation, 2 not found/denied; 70 a bug). */
  exit: number;
  /**
   * MCP: a tool result with `isError: true` and JSON `{"error":{code,message}}` within the tool
   * budget (DESIGN.md §3.1), never a protocol error; `message` says whether the line is shown.
   */
  mcp: { isError: true; message: 'shown' | 'generic' };
}

const shown = { isError: true, message: 'shown' } as const;

/** The one table from error code to every surface's answer; the surfaces read it, never restate it. */
export const ERROR_TABLE: Readonly<Record<SluiceErrorCode, ErrorRendering>> = {
  invalid_params: { rpc: -32602, http: 400, exit: 1, mcp: shown },
  invalid_cursor: { rpc: -32010, http: 400, exit: 1, mcp: shown },
  not_found: { rpc: -32004, http: 404, exit: 2, mcp: shown },
  not_member: { rpc: -32003, http: 403, exit: 2, mcp: shown },
  denied: { rpc: -32001, http: 403, exit: 2, mcp: shown },
  conflict: { rpc: -32009, http: 409, exit: 1, mcp: shown },
  too_large: { rpc: -32013, http: 413, exit: 1, mcp: shown },
  unavailable: { rpc: -32050, http: 503, exit: 1, mcp: shown },
  // Over a per-principal rate: `data.retryAfterMs` says when one more is accepted (HTTP Retry-After).
  rate_limited: { rpc: -32029, http: 429, exit: 1, mcp: shown },
  // A bug: its details go to the log, the user gets one generic line.
  internal: { rpc: -32603, http: 500, exit: 70, mcp: { isError: true, message: 'generic' } },
};

/** How an error code renders; an unknown code (a bug) renders as `internal`. */
export function renderingOf(code: string): ErrorRendering {
  return Object.hasOwn(ERROR_TABLE, code) ? ERROR_TABLE[code as SluiceErrorCode] : ERROR_TABLE.internal;
}

/** Longest message a surface shows. */
export const MAX_ERROR_MESSAGE_CHARS = 500;

/** The one line a surface shows for an error message: line breaks folded, length capped. */
export function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').slice(0, MAX_ERROR_MESSAGE_CHARS);
}

/**
 * A driver's transient failure (SQLite busy, PostgreSQL refusing connections) is `unavailable`:
 * the caller may retry. Anything else that is not a SluiceError is a bug.
 */
export function isTransientStoreError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'ECONNREFUSED';
}
