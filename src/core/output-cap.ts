import { utf8Length } from './measure.js';

/**
 * Claude Code 2.1.332's Bash tool keeps 30,000 UTF-8 bytes of a command's output (measured: 30,000
 * arrive whole, 30,001 go to a file with a 2 KB preview).
 */
export const CLAUDE_MAX_BYTES = 30_000;

/**
 * Codex 0.171's `exec_command` keeps 10,000 UTF-8 bytes of a command's output (measured with the
 * real client: 10,000 arrive whole, 10,001 come back with the middle cut). docs/delivery.md.
 */
export const CODEX_MAX_BYTES = 10_000;

/** The clients whose shell-output cap Sluice knows. */
export type ShellClient = 'claude' | 'codex';

/** The shell-output cap of a client, in UTF-8 bytes. */
export function shellOutputCap(client: ShellClient): number {
  return client === 'codex' ? CODEX_MAX_BYTES : CLAUDE_MAX_BYTES;
}

/**
 * How many receipts a page run without a budget leaves room for: the most a harness delivery
 * carries (16 messages), which the model handles in the command that fetches the first page.
 */
export const DEFAULT_RECEIPT_ROOM = 16;

/** Every message id Sluice makes is 26 characters (src/core/ids.ts); a reply's id is one of them. */
const REPLY_ID = 'R'.repeat(26);
// The longest archivedAt an ISO timestamp prints (a 6-digit year would be longer: not before 10000).
const ARCHIVED_AT = '0000-00-00T00:00:00.000Z';

/**
 * UTF-8 bytes the handling of message `id` prints, at most: `sluice message handle`'s receipt
 * line (`reply --archive --json` prints the same; its text form is shorter).
 */
export function receiptBytes(id: string): number {
  const receipt = { id, reply: REPLY_ID, archived: true, archivedAt: ARCHIVED_AT, already: false };
  return utf8Length(JSON.stringify(receipt)) + 1;
}

/** The receipt of a message with one of Sluice's own 26-character ids. */
export const PLAIN_RECEIPT_BYTES = receiptBytes('0'.repeat(26));

/**
 * The byte budget of a page run without one (the delivery's `&& … ls`, the metadata notice's
 * `ls`, a model's own): the client's cap less the receipts of a whole delivery handled before it
 * in the same command. A page's `next` carries the exact budget for the page after it instead.
 */
export function defaultPageBytes(cap: number): number {
  return cap - DEFAULT_RECEIPT_ROOM * PLAIN_RECEIPT_BYTES;
}

/**
 * The budget of the page that follows one showing `ids`: the model handles those rows and runs
 * the continuation in one command, so their receipts come first in the same output.
 */
export function pageBytesAfter(cap: number, ids: readonly string[]): number {
  let receipts = 0;
  for (const id of ids) receipts += receiptBytes(id);
  return cap - receipts;
}

/**
 * At most this many rows on one page, so that their receipts leave at least half the cap to the
 * page that follows them (rows with tiny bodies are barely larger than their receipts).
 */
export function maxRowsForCap(cap: number): number {
  return Math.max(1, Math.floor(cap / 2 / PLAIN_RECEIPT_BYTES));
}
