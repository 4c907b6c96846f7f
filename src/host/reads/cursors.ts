import { z } from 'zod';
import { type CursorBinding, decodeCursor, encodeCursor } from '../../core/cursor.js';
import { isSluiceError, SluiceError } from '../../core/errors.js';
import type { HostContext } from '../identity/context.js';

/**
 * Every cursor a reader issues, one schema per kind. The token (core/cursor.ts) proves who issued
 * it for which binding; the schema proves the payload has the shape this kind needs, so a reader
 * never checks payload fields by hand. Payload keys are one letter: every token is part of a
 * budgeted reply.
 */
export interface CursorKind<T extends Record<string, unknown>> {
  readonly name: string;
  readonly schema: z.ZodType<T>;
  /** The line a well-signed token with the wrong payload gets. */
  readonly refusal: string;
}

const offset = z.number().int().min(0);

/** `channel_read`/`channel_search` pages: the keyset value (inbox position or message seq) to continue after. */
export const READ_PAGE_CURSOR: CursorKind<{ k: number }> = {
  name: 'read-page',
  schema: z.object({ k: offset }),
  refusal: 'invalid cursor: no position in it',
};

/** `channel_read {message_id}` fragments: the UTF-16 offset of the next fragment. */
export const CONTENT_CURSOR: CursorKind<{ o: number }> = {
  name: 'content',
  schema: z.object({ o: z.number().int() }),
  refusal: 'invalid content cursor: no offset',
};

/** `queue.page`: agent, generation and filter (a mismatch is a stale reply), and the boundary card. */
export const QUEUE_PAGE_CURSOR: CursorKind<QueuePageCursor> = {
  name: 'queue-page',
  schema: z.object({
    a: z.string(),
    g: z.string(),
    f: z.string(),
    d: z.enum(['after', 'before']),
    p: z.number().int(),
    m: z.string(),
    s: z.enum(['waiting', 'returned', 'handled', 'archived', 'withdrawn']),
  }),
  refusal: 'invalid cursor: unexpected payload',
};

export interface QueuePageCursor extends Record<string, unknown> {
  a: string;
  g: string;
  f: string;
  /** Direction of travel from the boundary card (position, message id, state). */
  d: 'after' | 'before';
  p: number;
  m: string;
  s: 'waiting' | 'returned' | 'handled' | 'archived' | 'withdrawn';
}

/** Body parts (`queue.read`, `message.read`): the next UTF-16 offset and the revision it belongs to. */
export const BODY_PART_CURSOR: CursorKind<{ o: number; r: number }> = {
  name: 'body-part',
  schema: z.object({ o: offset, r: z.number() }),
  refusal: 'invalid cursor: unexpected payload',
};

/** `channel.history` pages: the message seq to continue before. */
export const HISTORY_CURSOR: CursorKind<{ b: number }> = {
  name: 'history',
  schema: z.object({ b: z.number().int() }),
  refusal: 'invalid cursor: unexpected payload',
};

/** Lists ordered by name (`channel.list`, invitations): the name to continue after. */
export const NAME_CURSOR: CursorKind<{ after: string }> = {
  name: 'name',
  schema: z.object({ after: z.string() }),
  refusal: 'invalid cursor: unexpected payload',
};

/** Signs a payload of `kind` for `binding`; a payload outside the kind's schema is a bug. */
export function issueCursor<T extends Record<string, unknown>>(
  ctx: HostContext,
  kind: CursorKind<T>,
  binding: CursorBinding,
  payload: T,
): string {
  if (!kind.schema.safeParse(payload).success) {
    throw new SluiceError('internal', `a ${kind.name} cursor payload does not match its schema`);
  }
  return encodeCursor(ctx.cursorSecret, binding, payload);
}

/**
 * Verifies `token` for `binding` and parses its payload as `kind`: a bad token is
 * `invalid_cursor` (core/cursor.ts says why), a well-signed one of the wrong shape is
 * `invalid_cursor` with the kind's refusal. `hint`, when given, is appended to a refusal (what
 * the reader can do instead).
 */
export function readCursor<T extends Record<string, unknown>>(
  ctx: HostContext,
  kind: CursorKind<T>,
  binding: CursorBinding,
  token: unknown,
  hint?: string,
): T {
  let raw: Record<string, unknown>;
  try {
    raw = decodeCursor(ctx.cursorSecret, binding, token);
  } catch (err) {
    if (hint !== undefined && isSluiceError(err) && err.code === 'invalid_cursor') {
      throw new SluiceError('invalid_cursor', `${err.message}; ${hint}`);
    }
    throw err;
  }
  const parsed = kind.schema.safeParse(raw);
  if (!parsed.success) throw new SluiceError('invalid_cursor', kind.refusal);
  return parsed.data;
}
