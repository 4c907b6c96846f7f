import { SluiceError } from '../../core/errors.js';
import { shellWord } from '../../core/shell-word.js';
import { provenanceOf, type RelationOf } from '../../host/messages/index.js';
import type { InboxListing } from '../../host/queue/index.js';
import {
  bodyVersion,
  type ContinueCommands,
  DEFAULT_MAX_CHARS,
  fitsReadBudget,
  inModelShell,
  type MessageRow,
  MIN_MAX_BYTES,
  MIN_MAX_CHARS,
  type ReadBudget,
  readBudgetFor,
} from './bounded-read.js';
import type { GlobalOptions } from './context.js';
import { parseLimit } from './io.js';

// How `sluice message ls` and `read` shape what they print: the row, the budget options and the
// commands a bounded read names to continue (the pages themselves: message-page.ts).

/** The `message ls --json` row shape (DESIGN.md §4). */
export function listingRow(listing: InboxListing, includeBody: boolean, relationOf: RelationOf): MessageRow {
  const p = listing.projection;
  return {
    id: p.message_id,
    channel: listing.channelName,
    from: p.author.name,
    ...provenanceOf(p, relationOf),
    createdAt: p.created_at,
    subject: p.subject ?? null,
    replyTo: p.reply_to?.message_id ?? null,
    state: listing.entry.state,
    attachments: p.attachments,
    ...(includeBody ? { body: p.body } : {}),
  };
}

export const MAX_CHARS_HELP = `print at most N characters (default ${DEFAULT_MAX_CHARS}, or the byte budget when larger)`;
export const MAX_BYTES_HELP =
  "print at most N UTF-8 bytes (default: the client's output cap less room for 16 receipts; never above the cap in Claude Code or Codex)";

export function parseMaxChars(value: string | undefined): number {
  const n = parseLimit(value, '--max-chars', 100_000_000, DEFAULT_MAX_CHARS);
  if (n < MIN_MAX_CHARS)
    throw new SluiceError('invalid_params', `--max-chars must be at least ${MIN_MAX_CHARS}`);
  return n;
}

export function parseMaxBytes(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = parseLimit(value, '--max-bytes', 100_000_000, 0);
  if (n < MIN_MAX_BYTES)
    throw new SluiceError('invalid_params', `--max-bytes must be at least ${MIN_MAX_BYTES}`);
  return n;
}

/** `--max-chars` and `--max-bytes` over the client's defaults (bounded-read.ts `readBudgetFor`). */
export function readBudget(opts: {
  maxChars?: string | undefined;
  maxBytes?: string | undefined;
}): ReadBudget {
  return readBudgetFor(process.env, {
    maxChars: opts.maxChars === undefined ? undefined : parseMaxChars(opts.maxChars),
    maxBytes: parseMaxBytes(opts.maxBytes),
  });
}

export function parseOffset(value: string): number {
  if (!/^\d{1,10}$/.test(value)) throw new SluiceError('invalid_params', '--offset must be a whole number');
  return Number(value);
}

/**
 * The exact commands that continue a bounded read, repeating the options that shaped it and the
 * `--as`/`--home`/`--db` typed on this command line (the environment carries over by itself).
 * They stay at the end, so the command still starts with `sluice message` (what clients pre-approve).
 */
export function continueCommands(
  opts: { from?: string; archive?: boolean; limit?: string; maxChars?: string; maxBytes?: string },
  typed: GlobalOptions,
): ContinueCommands {
  const where = [
    ...(typed.as !== undefined ? [` --as ${shellWord(typed.as)}`] : []),
    ...(typed.home !== undefined ? [` --home ${shellWord(typed.home)}`] : []),
    ...(typed.db !== undefined ? [` --db ${shellWord(typed.db)}`] : []),
  ].join('');
  const shared = opts.maxChars !== undefined ? ` --max-chars ${parseMaxChars(opts.maxChars)}` : '';
  const typedBytes = parseMaxBytes(opts.maxBytes);
  // A page in a model's shell names the budget of the page after it; otherwise a typed one repeats.
  const bytesFlag = (maxBytes: number | undefined) => {
    const n = maxBytes ?? typedBytes;
    return n === undefined ? '' : ` --max-bytes ${n}`;
  };
  const list = [
    ...(opts.archive ? [' --archive'] : []),
    ...(opts.from !== undefined ? [` --from ${shellWord(opts.from)}`] : []),
    ...(opts.limit !== undefined ? [` --limit ${opts.limit}`] : []),
  ].join('');
  return {
    listAfter: (id, maxBytes) =>
      `sluice message ls --json --include-body${list}${shared} --since ${shellWord(id)}${bytesFlag(maxBytes)}${where}`,
    // In a model's shell a read part runs alone, so it takes the default budget, not a page's chained one.
    listFrom: (id, offset, version, maxBytes) =>
      `sluice message ls --json --include-body${list}${shared} --resume ${shellWord(id)} --offset ${offset} --body-sha ${version}${bytesFlag(maxBytes)}${where}`,
    readFrom: (id, offset, version) =>
      `sluice message read ${shellWord(id)} --json${shared}${inModelShell(process.env) ? '' : bytesFlag(undefined)}${offset > 0 ? ` --offset ${offset}${version === undefined ? '' : ` --body-sha ${version}`}` : ''}${where}`,
  };
}

/**
 * Text `ls --include-body` within `budget`: whole entries, oldest first, and a last line naming
 * the command that continues (the JSON form's `next`).
 */
export function boundedTextListing(
  rows: readonly InboxListing[],
  entries: readonly string[],
  hasMore: boolean,
  budget: ReadBudget,
  commands: ContinueCommands,
): string {
  let text = '';
  for (const [i, entry] of entries.entries()) {
    const row = rows[i] as InboxListing;
    const isLast = i === entries.length - 1;
    const tail = isLast && !hasMore ? '' : `next: ${commands.listAfter(row.projection.message_id)}\n`;
    if (!fitsReadBudget(`${text}${entry}\n${tail}`, budget)) {
      if (i === 0) {
        const id = row.projection.message_id;
        return `${id} is too large to show here; read it: ${commands.readFrom(id, 0)}\nnext: ${commands.listAfter(id)}\n`;
      }
      const prev = rows[i - 1] as InboxListing;
      return `${text}next: ${commands.listAfter(prev.projection.message_id)}\n`;
    }
    text += `${entry}\n`;
  }
  const last = rows.at(-1);
  return hasMore && last ? `${text}next: ${commands.listAfter(last.projection.message_id)}\n` : text;
}

/** Where a continuation starts: a message, an offset in its body, and the body's version there. */
export interface ResumePoint {
  id: string;
  offset: number;
  /** `--body-sha`: which body the part before was cut from (required past offset 0). */
  version: string | undefined;
}

/**
 * `--resume ID --offset N --body-sha V`: the first two only together, only for the JSON page,
 * never with `--since`; past offset 0 with the body's version (what a page's `next` names).
 */
export function resumePoint(opts: {
  resume?: string;
  offset?: string;
  bodySha?: string;
  since?: string;
  json?: boolean;
  includeBody?: boolean;
}): ResumePoint | undefined {
  if (opts.resume === undefined && opts.offset === undefined) {
    if (opts.bodySha !== undefined) throw new SluiceError('invalid_params', '--body-sha goes with --resume');
    return undefined;
  }
  if (opts.resume === undefined || opts.offset === undefined)
    throw new SluiceError('invalid_params', '--resume and --offset go together');
  if (!opts.json || !opts.includeBody)
    throw new SluiceError('invalid_params', '--resume needs --json --include-body');
  if (opts.since !== undefined)
    throw new SluiceError('invalid_params', '--resume and --since exclude each other');
  const offset = parseOffset(opts.offset);
  return { id: opts.resume, offset, version: parseBodySha(opts.bodySha, offset) };
}

/** `--body-sha`: 16 lowercase hex digits, required with an offset past 0 (it names what was read). */
export function parseBodySha(value: string | undefined, offset: number): string | undefined {
  if (value === undefined) {
    if (offset > 0)
      throw new SluiceError(
        'invalid_params',
        '--offset past 0 needs --body-sha: run the next command as printed',
      );
    return undefined;
  }
  if (!/^[0-9a-f]{16}$/.test(value))
    throw new SluiceError('invalid_params', '--body-sha must be the 16 hex digits a next command names');
  return value;
}

/**
 * Refuses to go on from `offset` in a body that is no longer the one the part before was cut from
 * (edited since): joined, the parts would give a body nobody wrote, and the model would handle
 * it. `restart` names the command that reads the new body (of version `current`) from its start.
 */
export function assertSameBody(
  id: string,
  body: string,
  offset: number,
  version: string | undefined,
  restart: (current: string) => string,
): void {
  if (offset === 0 || version === undefined) return;
  const current = bodyVersion(body);
  if (current === version) return;
  throw new SluiceError(
    'conflict',
    `message ${id} was edited after the part you have; read it again from its start: ${restart(current)}`,
  );
}

/**
 * The offset a resumed page starts at in its first row's body: the resume point's when that row
 * is the resumed message (it may have left the inbox meanwhile: then the page starts after it),
 * once the body is the one the part before was cut from.
 */
export function resumeOffset(
  resume: ResumePoint | undefined,
  first: { message_id: string; body: string } | undefined,
  commands: ContinueCommands,
): number {
  if (resume === undefined || first === undefined || first.message_id !== resume.id) return 0;
  const restart = (current: string) => commands.listFrom(resume.id, 0, current);
  assertSameBody(resume.id, first.body, resume.offset, resume.version, restart);
  return resume.offset;
}

/**
 * `message read --json --offset N --body-sha V`: where the part to print starts, once the body is
 * the one the part before was cut from. `--body-sha` goes only with `--offset`.
 */
export function partOffset(
  opts: { offset?: string; bodySha?: string },
  message: { message_id: string; body: string },
  commands: ContinueCommands,
): number {
  if (opts.offset === undefined) {
    if (opts.bodySha !== undefined) throw new SluiceError('invalid_params', '--body-sha goes with --offset');
    return 0;
  }
  const offset = parseOffset(opts.offset);
  const version = parseBodySha(opts.bodySha, offset);
  assertSameBody(message.message_id, message.body, offset, version, () =>
    commands.readFrom(message.message_id, 0),
  );
  return offset;
}
