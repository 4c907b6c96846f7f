import { createHash } from 'node:crypto';
import { SluiceError } from '../../core/errors.js';
import { utf8Length } from '../../core/measure.js';
import { isWellFormed, quoteInput } from '../../core/text.js';
import { findInboxEntry } from '../../store/ops/inbox.js';
import { findMessageById } from '../../store/ops/messages.js';
import type { HostContext } from '../identity/context.js';
import type { Principal } from '../identity/principals.js';
import { archiveMessages, requireAgent } from '../queue/inbox.js';
import { getMessageRow, replyToMessage } from './messages.js';

/** Most items one `message handle` batch takes (the archive call's own limit). */
export const MAX_HANDLE_ITEMS = 1000;

/** One handled message: an optional reply, then (by default) archived. */
export interface HandleItem {
  id: string;
  /** The reply's body; absent or null: archive without replying. */
  body?: string | undefined;
  /** Archive the message after replying; default true. */
  archive: boolean;
}

/** What `message handle` and `message reply --archive` did for one item. */
export interface HandleReceipt {
  id: string;
  /** The reply's id (the first reply's id again on a repeat), or null when there was no body. */
  reply: string | null;
  archived: boolean;
  /** When it was archived (the first time, on a repeat), or null when not archived. */
  archivedAt: string | null;
  /** True when a repeat found the message already archived. */
  already: boolean;
}

/**
 * The idempotency key a reply made while handling a message is stored under: derived from the
 * message and the reply's content, so the same reply to the same message, repeated by either
 * `message reply --archive` or `message handle`, stores nothing again (within the key retention).
 */
export function handleReplyKey(messageId: string, body: string, subject?: string | undefined): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([body, subject ?? null]), 'utf8')
    .digest('hex');
  return `handle:${messageId.slice(0, 80)}:${digest}`;
}

/**
 * Parses `message handle` input: one JSON object per non-empty line,
 * `{"id": "…", "body": "…", "archive": true}`. Any invalid line refuses the whole batch with
 * `invalid_params` naming its line number, before anything is changed.
 */
export function parseHandleLines(text: string, maxBodyBytes: number): HandleItem[] {
  const items: HandleItem[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).replace(/\r$/, '');
    if (line.trim() === '') continue;
    const where = `line ${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new SluiceError(
        'invalid_params',
        `${where} is not JSON: write one {"id","body","archive"} per line`,
      );
    }
    items.push(itemFrom(value, where, maxBodyBytes));
    if (items.length > MAX_HANDLE_ITEMS) {
      throw new SluiceError('invalid_params', `at most ${MAX_HANDLE_ITEMS} messages per handle call`);
    }
  }
  if (items.length === 0) {
    throw new SluiceError('invalid_params', 'no items on stdin: write one {"id","body","archive"} per line');
  }
  return items;
}

function itemFrom(value: unknown, where: string, maxBodyBytes: number): HandleItem {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SluiceError('invalid_params', `${where} must be an object {"id","body","archive"}`);
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (key !== 'id' && key !== 'body' && key !== 'archive') {
      throw new SluiceError('invalid_params', `${where} has unknown field ${quoteInput(key, 40)}`);
    }
  }
  const { id, body, archive } = record;
  if (typeof id !== 'string' || id.length === 0 || id.length > 4096) {
    throw new SluiceError('invalid_params', `${where}: id must be a message id`);
  }
  if (archive !== undefined && typeof archive !== 'boolean') {
    throw new SluiceError('invalid_params', `${where}: archive must be true or false`);
  }
  if (body !== undefined && body !== null) {
    if (typeof body !== 'string' || !isWellFormed(body) || body.trim() === '') {
      throw new SluiceError('invalid_params', `${where}: body must be non-empty well-formed text`);
    }
    const bytes = utf8Length(body);
    if (bytes > maxBodyBytes) {
      throw new SluiceError('too_large', `${where}: body is ${bytes} bytes; the limit is ${maxBodyBytes}`);
    }
  }
  const item: HandleItem = { id, archive: archive ?? true };
  if (typeof body === 'string') item.body = body;
  if (item.body === undefined && !item.archive) {
    throw new SluiceError('invalid_params', `${where} neither replies nor archives`);
  }
  return item;
}

/**
 * Replies to and archives many messages in one call. Every item is checked first (each id is in
 * the agent's inbox and readable): one bad item refuses the batch and changes nothing. Then each
 * reply is stored under {@link handleReplyKey} and all archives happen in one transaction, so the
 * batch is an idempotent sequence: repeating it (also after a crash part-way) stores no reply
 * twice and archives nothing twice, and completes whatever the first run did not.
 */
export async function handleMessages(
  ctx: HostContext,
  agent: Principal,
  items: readonly HandleItem[],
): Promise<HandleReceipt[]> {
  requireAgent(agent);
  if (items.length === 0) throw new SluiceError('invalid_params', 'name at least one message to handle');
  if (items.length > MAX_HANDLE_ITEMS) {
    throw new SluiceError('invalid_params', `at most ${MAX_HANDLE_ITEMS} messages per handle call`);
  }
  for (const item of items) {
    const message = await findMessageById(ctx.store.db, item.id);
    const entry = message ? await findInboxEntry(ctx.store.db, agent.id, message.seq) : undefined;
    if (!entry)
      throw new SluiceError('not_found', `no message ${quoteInput(item.id)} in ${agent.name}'s inbox`);
    // A reply needs the channel to be readable now (membership), checked before any reply is stored.
    if (item.body !== undefined) await getMessageRow(ctx, agent, item.id);
  }
  const replies = new Map<number, string>();
  for (const [i, item] of items.entries()) {
    if (item.body === undefined) continue;
    const sent = await replyToMessage(ctx, agent, item.id, {
      body: item.body,
      idempotencyKey: handleReplyKey(item.id, item.body),
    });
    replies.set(i, sent.message_id);
  }
  const toArchive = items.filter((item) => item.archive).map((item) => item.id);
  const archived = toArchive.length > 0 ? await archiveMessages(ctx, agent, toArchive) : [];
  const receiptById = new Map<string, (typeof archived)[number]>();
  for (const r of archived) if (!receiptById.has(r.id)) receiptById.set(r.id, r);
  // archiveMessages marks a later duplicate id `already`; report each id's first receipt per item.
  const firstSeen = new Set<string>();
  return items.map((item, i) => {
    const receipt = item.archive ? receiptById.get(item.id) : undefined;
    const repeatInBatch = item.archive && firstSeen.has(item.id);
    if (item.archive) firstSeen.add(item.id);
    return {
      id: item.id,
      reply: replies.get(i) ?? null,
      archived: receipt !== undefined,
      archivedAt: receipt?.archivedAt ?? null,
      already: receipt !== undefined && (receipt.already || repeatInBatch),
    };
  });
}
