import { createHash } from 'node:crypto';
import { SluiceError } from '../../core/errors.js';
import { isWellFormed } from '../../core/text.js';
import {
  deleteIdempotencyKeysBefore,
  findIdempotencyKey,
  insertIdempotencyKey,
} from '../../store/ops/idempotency.js';
import type { Db } from '../../store/store.js';

/**
 * How long a send's key is remembered. The contract promises at least 24 hours; keys are kept
 * twice that, then forgotten when the same principal next sends with a key (a key used again
 * after that stores a new message).
 */
export const IDEMPOTENCY_KEY_RETENTION_MS = 48 * 60 * 60 * 1000;

/** Longest accepted key, in characters (code points). */
export const MAX_IDEMPOTENCY_KEY_CHARS = 200;

// Printable: no control, format, private-use, unassigned or lone-surrogate code points, no line breaks.
const PRINTABLE = /^[^\p{C}\p{Zl}\p{Zp}]+$/u;

/** What a client asked to send, as it stated it: a retry states it again identically. */
export interface SendRequest {
  /** `send` addresses `target` (#channel, channel id or principal); `reply` answers message `target`. */
  op: 'send' | 'reply';
  target: string;
  body: string;
  subject?: string | undefined;
  replyTo?: string | undefined;
  /**
   * The attachments as content, not upload ids: `sha256:<digest>:<name>` for each of the sender's
   * uploads (a retry after a dropped connection uploads the same file again and gets a new id),
   * the id itself for anything else (refused later). See `attachmentFingerprints` in messages.ts.
   */
  attachments?: readonly string[] | undefined;
  actions?: readonly unknown[] | undefined;
}

/** A send's key and the fingerprint of its request. */
export interface IdempotencyClaim {
  key: string;
  requestSha256: string;
}

/** The result a keyed send returns, first time and on every retry. */
export interface KeyedResult {
  message_id: string;
  channel_id: string;
  seq: number;
}

/** The key as given, or `undefined` when absent; anything else is `invalid_params`. */
export function validateIdempotencyKey(key: unknown): string | undefined {
  if (key === undefined) return undefined;
  if (
    typeof key !== 'string' ||
    !isWellFormed(key) ||
    [...key].length > MAX_IDEMPOTENCY_KEY_CHARS ||
    !PRINTABLE.test(key)
  ) {
    throw new SluiceError(
      'invalid_params',
      `idempotency_key must be 1-${MAX_IDEMPOTENCY_KEY_CHARS} printable characters`,
      { field: 'idempotency_key' },
    );
  }
  return key;
}

/** A claim for a keyed request, or `undefined` for a send without a key. */
export function claimFor(key: string | undefined, request: SendRequest): IdempotencyClaim | undefined {
  if (key === undefined) return undefined;
  const canonical = JSON.stringify([
    request.op,
    request.target,
    request.body,
    request.subject ?? null,
    request.replyTo ?? null,
    request.attachments ?? [],
    request.actions ?? [],
  ]);
  return { key, requestSha256: createHash('sha256').update(canonical, 'utf8').digest('hex') };
}

function cutoff(now: Date): string {
  return new Date(now.getTime() - IDEMPOTENCY_KEY_RETENTION_MS).toISOString();
}

/**
 * The first result of a send this principal already made under the claim's key (kept keys only),
 * or `undefined`. The same key with another request is `conflict`: nothing is stored.
 */
export async function priorSend(
  db: Db,
  principalId: string,
  claim: IdempotencyClaim,
  now: Date,
): Promise<KeyedResult | undefined> {
  const row = await findIdempotencyKey(db, principalId, claim.key);
  if (!row || row.created_at < cutoff(now)) return undefined;
  if (row.request_sha256 !== claim.requestSha256) {
    throw new SluiceError(
      'conflict',
      `idempotency_key was already used for another request (message ${row.message_id}); use a new key`,
      { field: 'idempotency_key', message_id: row.message_id },
    );
  }
  return { message_id: row.message_id, channel_id: row.channel_id, seq: Number(row.message_seq) };
}

/** Thrown inside a send's transaction when a concurrent retry took the key first: roll back, replay. */
export class KeyTakenMeanwhile extends Error {
  constructor() {
    super('idempotency key taken by a concurrent send');
    this.name = 'KeyTakenMeanwhile';
  }
}

/**
 * Records the claim with the message it stored, inside the send's transaction, after forgetting
 * this principal's expired keys. Throws {@link KeyTakenMeanwhile} if the key is already taken.
 */
export async function recordSend(
  trx: Db,
  principalId: string,
  claim: IdempotencyClaim,
  sent: KeyedResult,
  now: Date,
): Promise<void> {
  await deleteIdempotencyKeysBefore(trx, principalId, cutoff(now));
  const inserted = await insertIdempotencyKey(trx, {
    principal_id: principalId,
    key: claim.key,
    request_sha256: claim.requestSha256,
    message_id: sent.message_id,
    channel_id: sent.channel_id,
    message_seq: sent.seq,
    created_at: now.toISOString(),
  });
  if (!inserted) throw new KeyTakenMeanwhile();
}
