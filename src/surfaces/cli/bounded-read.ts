import { budgetedSlice, escapedCostAt } from '../../core/budgeted-slice.js';
import { SluiceError } from '../../core/errors.js';
import { fitJsonPage } from '../../core/fit.js';
import { jsonAround } from '../../core/json-frame.js';
import { utf8Length } from '../../core/measure.js';
import type { SenderRelation } from '../../core/provenance.js';

/**
 * A model's command chains a bounded read after the receipts of the batch it handled (the delivery
 * instruction asks for `… handle && … ls`), so a read takes this share of the client's output cap
 * by default; a receipt is at most ~0.6 of the row it answers, so both fit.
 */
export const MODEL_READ_SHARE = 0.6;

/** Default output budget of a model read in characters (UTF-16 units, newline included). */
export const DEFAULT_MAX_CHARS = 18_000;

/**
 * Claude Code 2.1.332's Bash tool keeps 30,000 UTF-8 bytes of a command's output (measured: 30,000
 * arrive whole, 30,001 go to a file with a 2 KB preview), so the default read is bounded in bytes
 * too: 30,000 characters of CJK would be 90,000 bytes.
 */
export const CLAUDE_MAX_BYTES = 30_000;

/**
 * Codex 0.171's `exec_command` keeps 10,000 UTF-8 bytes of a command's output (measured with the
 * real client: 10,000 arrive whole, 10,001 come back with the middle cut; gpt-5.1-codex and models
 * without a token policy — gpt-5.5's is 10,000 tokens, 40,000 bytes). docs/delivery.md.
 */
export const CODEX_MAX_BYTES = 10_000;

/** What a model read may print: characters (UTF-16 units) and, for some clients, UTF-8 bytes. */
export interface ReadBudget {
  chars: number;
  bytes?: number;
}

/**
 * The default budget for the client running this command: Codex sets CODEX_THREAD_ID in every
 * command it runs and keeps 10,000 bytes; otherwise Claude Code's 30,000 bytes. Either way
 * {@link MODEL_READ_SHARE} of it: 6,000 or 18,000 bytes.
 */
export function defaultReadBudget(env: NodeJS.ProcessEnv): ReadBudget {
  const cap = env.CODEX_THREAD_ID ? CODEX_MAX_BYTES : CLAUDE_MAX_BYTES;
  return { chars: DEFAULT_MAX_CHARS, bytes: Math.floor(cap * MODEL_READ_SHARE) };
}

function asBudget(budget: ReadBudget | number): ReadBudget {
  return typeof budget === 'number' ? { chars: budget } : budget;
}

/** True when `text` is within the budget in characters and, if it has one, in UTF-8 bytes. */
export function fitsReadBudget(text: string, budget: ReadBudget | number): boolean {
  const { chars, bytes } = asBudget(budget);
  return text.length <= chars && (bytes === undefined || utf8Length(text) <= bytes);
}

/** Smallest accepted `--max-chars`: room for one message's headers and a part of its body. */
export const MIN_MAX_CHARS = 2_000;

/** One message as `message ls --json` and `message read --json` print it (one shape for both). */
export interface MessageRow {
  id: string;
  channel: string;
  from: string;
  /** What the sender is to the reader (core/provenance.ts). */
  sender: SenderRelation;
  createdAt: string;
  subject: string | null;
  replyTo: string | null;
  /** The reader's inbox state, or null when the message is not in the reader's inbox. */
  state: string | null;
  attachments: readonly unknown[];
  body?: string;
}

/** The commands a bounded read names to continue. */
export interface ContinueCommands {
  /** Lists on, after message `id`. */
  listAfter: (id: string) => string;
  /** Reads message `id`, from UTF-16 offset `offset` of its body (0: the first part). */
  readFrom: (id: string, offset: number) => string;
}

/**
 * A page of complete messages within `budget` (a number: characters; newline included), the largest FIFO prefix:
 * `{"messages":[…],"next":…}`. `next` is the exact command that continues, null when the listing
 * is complete. When the first message is too large alone the page holds none: `next` reads it in
 * parts and `after` lists the messages after it.
 */
export function boundedMessagePage(
  rows: readonly MessageRow[],
  hasMore: boolean,
  budget: ReadBudget | number,
  commands: ContinueCommands,
): { text: string; count: number } {
  const { chars, bytes } = asBudget(budget);
  const fitted = fitJsonPage({
    arrayKey: 'messages',
    items: rows,
    budgets: bytes === undefined ? { utf16: chars - 1 } : { utf16: chars - 1, utf8: bytes - 1 },
    rest: (count) => {
      if (count === rows.length) {
        const last = rows[count - 1];
        return { next: hasMore && last ? commands.listAfter(last.id) : null };
      }
      if (count === 0) {
        const head = rows[0] as MessageRow;
        return { after: commands.listAfter(head.id), next: commands.readFrom(head.id, 0) };
      }
      return { next: commands.listAfter((rows[count - 1] as MessageRow).id) };
    },
  });
  return { text: `${fitted.text}\n`, count: fitted.count };
}

/**
 * One message within `budget` (a number: characters; newline included). A body too large comes in lossless parts:
 * `part` gives the body slice's UTF-16 `offset` and the body's `total` length, and `next` reads the
 * following part (null on the last). Joining the parts' bodies gives the body back exactly.
 */
export function boundedMessagePart(
  row: MessageRow & { body: string },
  offset: number,
  budget: ReadBudget | number,
  commands: ContinueCommands,
): string {
  const fits = (text: string) => fitsReadBudget(text, budget);
  const body = row.body;
  if (!Number.isInteger(offset) || offset < 0 || offset > body.length) {
    throw new SluiceError('invalid_params', `--offset must be from 0 to ${body.length} for this message`);
  }
  const render = (end: number) => {
    const whole = offset === 0 && end === body.length;
    const shown = { ...row, body: body.slice(offset, end) };
    const text = whole
      ? JSON.stringify({ ...shown, next: null })
      : JSON.stringify({
          ...shown,
          part: { offset, total: body.length },
          next: end < body.length ? commands.readFrom(row.id, end) : null,
        });
    return `${text}\n`;
  };
  const whole = render(body.length);
  if (offset === 0 && fits(whole)) return whole;
  // The longest cut that fits beside the longest frame (the `next` with the most digits), from
  // core's budgeted slice; then one code point at a time while a shorter frame leaves room.
  const frameFor = (next: number | null) =>
    jsonAround(
      {
        ...row,
        body: '',
        part: { offset, total: body.length },
        next: next === null ? null : commands.readFrom(row.id, next),
      },
      ['body'],
    );
  const longest = [frameFor(null), frameFor(body.length)].map((f) => `${f.before}""${f.after}\n`);
  const { chars, bytes } = asBudget(budget);
  let end = budgetedSlice(body, offset, {
    utf16: Math.max(0, chars - Math.max(...longest.map((t) => t.length))),
    utf8: bytes === undefined ? undefined : Math.max(0, bytes - Math.max(...longest.map(utf8Length))),
  }).end;
  while (end < body.length) {
    const next = end + escapedCostAt(body, end).step;
    if (!fits(render(next))) break;
    end = next;
  }
  if (end === offset && offset < body.length) {
    throw new SluiceError(
      'invalid_params',
      `--max-chars ${asBudget(budget).chars} leaves no room for this message's body`,
    );
  }
  return render(end);
}
