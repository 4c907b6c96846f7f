import { budgetedSlice, escapedCostAt } from '../../core/budgeted-slice.js';
import { SluiceError } from '../../core/errors.js';
import { sha256Hex } from '../../core/fragment.js';
import { jsonAround } from '../../core/json-frame.js';
import { utf8Length } from '../../core/measure.js';
import { defaultPageBytes, shellOutputCap } from '../../core/output-cap.js';
import type { MessageOrigin, SenderRelation } from '../../core/provenance.js';

export { CLAUDE_MAX_BYTES, CODEX_MAX_BYTES } from '../../core/output-cap.js';

/** Default output budget of a read in characters outside a model's shell (UTF-16 units, newline included). */
export const DEFAULT_MAX_CHARS = 18_000;

/** Smallest accepted `--max-bytes`: room for one message's headers and a part of its body. */
export const MIN_MAX_BYTES = 2_000;

/**
 * What a model read may print: characters (UTF-16 units) and, for some clients, UTF-8 bytes.
 * `cap` is the client's whole shell-output cap when the read runs in a model's shell: a page then
 * sizes the page after it to what is left of the cap beside the receipts of its own rows.
 */
export interface ReadBudget {
  chars: number;
  bytes?: number;
  cap?: number;
}

/** The shell-output cap of the client running this command: Codex sets CODEX_THREAD_ID in every command. */
export function clientOutputCap(env: NodeJS.ProcessEnv): number {
  return shellOutputCap(env.CODEX_THREAD_ID ? 'codex' : 'claude');
}

/** True in a model's shell: Claude Code sets CLAUDECODE, Codex CODEX_THREAD_ID, a driver SLUICE_AGENT_LOCK. */
export function inModelShell(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.CLAUDECODE || env.CODEX_THREAD_ID || env.SLUICE_AGENT_LOCK);
}

/**
 * The default budget for the client running this command: its cap less the receipts of a whole
 * delivery handled before the read in the same command ({@link defaultPageBytes}), and as many
 * characters (a character is at least a byte), never fewer than {@link DEFAULT_MAX_CHARS}.
 */
export function defaultReadBudget(env: NodeJS.ProcessEnv): ReadBudget {
  const cap = clientOutputCap(env);
  const bytes = defaultPageBytes(cap);
  return {
    chars: Math.max(DEFAULT_MAX_CHARS, bytes),
    bytes,
    ...(inModelShell(env) ? { cap } : {}),
  };
}

/**
 * The budget of one read: `maxBytes` (`--max-bytes`, what a page's `next` carries) and `maxChars`
 * (`--max-chars`) over the defaults. In a model's shell neither ever lifts the client's byte cap;
 * in a person's terminal `--max-chars` alone is the only bound.
 */
export function readBudgetFor(
  env: NodeJS.ProcessEnv,
  given: { maxChars?: number | undefined; maxBytes?: number | undefined },
): ReadBudget {
  const defaults = defaultReadBudget(env);
  const { maxChars, maxBytes } = given;
  if (!inModelShell(env)) {
    if (maxBytes !== undefined)
      return { chars: maxChars ?? Math.max(DEFAULT_MAX_CHARS, maxBytes), bytes: maxBytes };
    return maxChars === undefined ? defaults : { chars: maxChars };
  }
  const cap = clientOutputCap(env);
  const bytes = Math.min(maxBytes ?? (defaults.bytes as number), cap);
  return { chars: maxChars ?? Math.max(DEFAULT_MAX_CHARS, bytes), bytes, cap };
}

/** A budget given as a number is characters only. */
export function asBudget(budget: ReadBudget | number): ReadBudget {
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
  /** The bridge it came through (`telegram`), only when it did. */
  via?: MessageOrigin;
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
  /** Lists on, after message `id`; with `maxBytes`, a page of at most that many bytes. */
  listAfter: (id: string, maxBytes?: number) => string;
  /**
   * Lists on from UTF-16 offset `offset` of message `id`'s body, then the messages after it;
   * `version` ({@link bodyVersion}) is the body the part before was cut from.
   */
  listFrom: (id: string, offset: number, version: string, maxBytes?: number) => string;
  /** Reads message `id`, from UTF-16 offset `offset` of its body (0: the first part) of `version`. */
  readFrom: (id: string, offset: number, version?: string) => string;
}

/**
 * What a continuation names as `--body-sha`: the first 16 hex digits of the SHA-256 of the whole
 * body a part was cut from. A body edited between two parts no longer matches, so the parts of
 * two versions are never joined into a body nobody wrote.
 */
export function bodyVersion(body: string): string {
  return sha256Hex(body).slice(0, 16);
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
  const version = bodyVersion(body);
  const render = (end: number) => {
    const whole = offset === 0 && end === body.length;
    const shown = { ...row, body: body.slice(offset, end) };
    const text = whole
      ? JSON.stringify({ ...shown, next: null })
      : JSON.stringify({
          ...shown,
          part: { offset, total: body.length },
          next: end < body.length ? commands.readFrom(row.id, end, version) : null,
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
        next: next === null ? null : commands.readFrom(row.id, next, version),
      },
      ['body'],
    );
  const longest = [frameFor(null), frameFor(body.length)].map((f) => `${f.before}""${f.after}\n`);
  const end = longestPartEnd(body, offset, budget, longest, render);
  if (end === offset && offset < body.length) {
    throw new SluiceError(
      'invalid_params',
      `--max-chars ${asBudget(budget).chars} leaves no room for this message's body`,
    );
  }
  return render(end);
}

/**
 * Where the longest part of `body` from `offset` ends when `render(end)` prints it within
 * `budget`: the cut that fits beside the longest of `frames` (each the whole output with an empty
 * body string, e.g. the `next` with the most digits), from core's budgeted slice, then one code
 * point at a time while a shorter frame leaves room. Never inside a surrogate pair; `offset` when
 * not even one code point fits.
 */
export function longestPartEnd(
  body: string,
  offset: number,
  budget: ReadBudget | number,
  frames: readonly string[],
  render: (end: number) => string,
): number {
  const { chars, bytes } = asBudget(budget);
  let end = budgetedSlice(body, offset, {
    utf16: Math.max(0, chars - Math.max(...frames.map((t) => t.length))),
    utf8: bytes === undefined ? undefined : Math.max(0, bytes - Math.max(...frames.map(utf8Length))),
  }).end;
  while (end < body.length) {
    const next = end + escapedCostAt(body, end).step;
    if (!fitsReadBudget(render(next), budget)) break;
    end = next;
  }
  return end;
}
