import { type DeliveryLimits, firstPageCommand, fitsOnePage, resolveLimits } from './delivery-limits.js';
import {
  commandId,
  inlineLabel,
  jsonOneLine,
  LIST_COMMAND,
  PARTS_NOTE,
  PLAIN_ID,
  PROVENANCE_NOTE,
  REPLY_AND_ARCHIVE,
  readCommand,
  SCHEMA,
  senderLabel,
} from './envelope-text.js';
import { fitLargestPrefix } from './fit.js';
import { utf8Length } from './measure.js';
import type { MessageOrigin, SenderRelation } from './provenance.js';

/**
 * An attachment reference as the harness sees it; `path` is the agent's materialised copy, or
 * `path_error` says in one line why there is none (a copy that could not be written).
 */
export interface DeliveryAttachment {
  attachment_id: string;
  name: string;
  mime: string;
  size: number;
  path?: string;
  path_error?: string;
}

/** An attachment's local copy for a delivery: its path, or why there is none (one line). */
export type AttachmentCopy = { path: string } | { pathError: string };

/** One pending inbox message, as the harness delivery carries it. */
export interface DeliveryCandidate {
  id: string;
  channel: string;
  from: string;
  /** What the sender is to this agent (core/provenance.ts): rendered beside `from`. */
  sender: SenderRelation;
  /** How it came in when not sent directly (`telegram`): rendered after `sender`, only when set. */
  via?: MessageOrigin | undefined;
  createdAt: string;
  subject: string | null;
  replyTo: string | null;
  body: string;
  attachments: DeliveryAttachment[];
}

export { DEFAULT_DELIVERY_LIMITS, type DeliveryLimits } from './delivery-limits.js';
export { senderLabel } from './envelope-text.js';

/**
 * Claude Code moves `additionalContext` longer than this many characters to a file and shows the
 * model only a preview, so the Claude adapter's envelope (with its wrapper) must stay within it.
 */
export const CLAUDE_ADDITIONAL_CONTEXT_LIMIT = 10000;

/** The head message that was too large to deliver, with the command that reads it whole. */
export interface OversizedHead {
  id: string;
  from: string;
  sender: SenderRelation;
  via?: MessageOrigin;
  createdAt: string;
  bodyBytes: number;
  read: string;
  /** Set when the head fits one listing page: the command that fetches it with what follows. */
  list?: string;
}

/** A rendered delivery and what it contains. */
export interface RenderedDelivery {
  /** Three lines (header, JSON, instruction), or '' when there is nothing to deliver. */
  text: string;
  /** Ids delivered with complete bodies, FIFO. */
  included: string[];
  /** Pending messages not included (they stay pending for the next delivery). */
  overflow: number;
  /** Set when the oldest pending message alone did not fit, even if the text had to drop it. */
  oversizedHead: null | OversizedHead;
  totalPending: number;
}

/** Input of {@link renderDelivery}. */
export interface DeliveryInput {
  agent: string;
  /** The true number of pending messages. */
  totalPending: number;
  /** Pending messages in FIFO order: at least the first maxMessages + 1, or all. */
  candidates: readonly DeliveryCandidate[];
  limits?: Partial<DeliveryLimits>;
  /** UTF-16 units the adapter wraps around the text; counted against `maxUnits`. */
  wrapperUnits?: number;
}

/** Wire form of a candidate: exactly the contract's fields, in the contract's order. */
function projectCandidate(c: DeliveryCandidate): Record<string, unknown> {
  return {
    id: c.id,
    channel: c.channel,
    from: c.from,
    sender: c.sender,
    ...(c.via === undefined ? {} : { via: c.via }),
    createdAt: c.createdAt,
    subject: c.subject,
    replyTo: c.replyTo,
    body: c.body,
    attachments: c.attachments.map((a) => {
      const wire: Record<string, unknown> = {
        attachment_id: a.attachment_id,
        name: a.name,
        mime: a.mime,
        size: a.size,
      };
      if (a.path !== undefined) wire.path = a.path;
      if (a.path_error !== undefined) wire.path_error = a.path_error;
      return wire;
    }),
  };
}

/**
 * Renders the harness delivery envelope `sluice.delivery.v1` (DESIGN.md §3.2): a header line, one
 * line of JSON and an instruction line, holding the largest whole FIFO prefix of `candidates`
 * within maxMessages, maxBytes (UTF-8 of the whole text) and maxUnits (UTF-16, with the wrapper).
 * Bodies are never truncated. When the head alone does not fit, nothing later is delivered
 * (never reorder, I7): the head is described by metadata and the command that reads it. Hostile
 * metadata degrades the text step by step; the text never exceeds a limit (at worst it is '').
 * Pure: reads its input, mutates nothing.
 */
export function renderDelivery(input: DeliveryInput): RenderedDelivery {
  const { agent, candidates } = input;
  const totalPending = Math.max(0, Math.floor(input.totalPending) || 0, candidates.length);
  if (totalPending === 0) {
    return { text: '', included: [], overflow: 0, oversizedHead: null, totalPending: 0 };
  }
  const limits = resolveLimits(input.limits);
  const unitsBudget = limits.maxUnits === undefined ? undefined : limits.maxUnits - (input.wrapperUnits ?? 0);
  const fitsLimits = (text: string) =>
    utf8Length(text) <= limits.maxBytes && (unitsBudget === undefined || text.length <= unitsBudget);

  const offered = candidates.slice(0, limits.maxMessages);
  const fit = fitLargestPrefix({
    items: offered.map((c) => jsonOneLine(projectCandidate(c))),
    budgets:
      unitsBudget === undefined ? { utf8: limits.maxBytes } : { utf8: limits.maxBytes, utf16: unitsBudget },
    frame: (count) =>
      deliveryFrame(
        agent,
        totalPending,
        count,
        firstPageCommand(
          LIST_COMMAND,
          limits.pageBytes,
          offered.slice(0, count).map((c) => c.id),
        ),
      ),
  });
  if (fit.count > 0 || (offered.length === 0 && fitsLimits(fit.text))) {
    return {
      text: fit.text,
      included: offered.slice(0, fit.count).map((c) => c.id),
      overflow: totalPending - fit.count,
      oversizedHead: null,
      totalPending,
    };
  }

  const head = candidates[0];
  const oversizedHead: OversizedHead | null =
    head === undefined
      ? null
      : {
          id: head.id,
          from: head.from,
          sender: head.sender,
          ...(head.via === undefined ? {} : { via: head.via }),
          createdAt: head.createdAt,
          bodyBytes: utf8Length(head.body),
          read: readCommand(head.id),
          // Pages end with a part of a body too large for them, so any head is fetched by listing.
          ...(limits.pageBytes === undefined ? {} : { list: LIST_COMMAND }),
        };
  const fitsPage =
    head !== undefined &&
    fitsOnePage(JSON.stringify({ ...projectCandidate(head), state: 'returned' }), limits.pageBytes);
  // Fallbacks, richest first: the text must fit, so drop what hostile metadata made too big.
  const attempts: string[] = [];
  if (oversizedHead !== null) {
    attempts.push(oversizedText(agent, totalPending, oversizedHead, oversizedHead, fitsPage));
    attempts.push(oversizedText(null, totalPending, oversizedHead, oversizedHead, fitsPage));
    attempts.push(
      oversizedText(
        null,
        totalPending,
        oversizedHead,
        {
          id: oversizedHead.id,
          sender: oversizedHead.sender,
          bodyBytes: oversizedHead.bodyBytes,
          read: oversizedHead.read,
          ...(oversizedHead.list === undefined ? {} : { list: oversizedHead.list }),
        },
        fitsPage,
      ),
    );
  }
  attempts.push(minimalText(totalPending));
  const text = attempts.find(fitsLimits) ?? '';
  return { text, included: [], overflow: totalPending, oversizedHead, totalPending };
}

/** Header, JSON opening and instruction around the first `count` delivered messages; `list` fetches the rest. */
function deliveryFrame(
  agent: string,
  totalPending: number,
  count: number,
  list: string,
): { before: string; after: string } {
  const overflow = totalPending - count;
  const status = count > 0 ? ', complete bodies below.' : '; none are included here.';
  const header = `[sluice] inbox for ${inlineLabel(agent)}: ${count} of ${totalPending} pending message(s)${status}`;
  const opening = jsonOneLine({
    schema: SCHEMA,
    agent,
    totalPending,
    included: count,
    overflow,
    oversizedHead: null,
  });
  const more =
    overflow > 0
      ? ` ${overflow} more pending message(s) not shown here: in the same command, after handling these, fetch the next batch with \`&& ${list}\` (it lists them with bodies, within your tool's output cap, and names the command that continues; ${PARTS_NOTE}).`
      : '';
  return {
    before: `${header}\n${opening.slice(0, -1)},"messages":[`,
    after: `]}\n${PROVENANCE_NOTE} ${REPLY_AND_ARCHIVE}${more}`,
  };
}

/** The envelope for an oversized head: its metadata and read command, and no bodies at all. */
function oversizedText(
  agent: string | null,
  totalPending: number,
  head: OversizedHead,
  shown: Partial<OversizedHead>,
  fitsPage: boolean,
): string {
  const who = agent === null ? '' : ` for ${inlineLabel(agent)}`;
  const header = `[sluice] inbox${who}: 0 of ${totalPending} pending message(s); the oldest is too large to include here, so no bodies are below.`;
  const json = jsonOneLine({
    schema: SCHEMA,
    ...(agent === null ? {} : { agent }),
    totalPending,
    included: 0,
    overflow: totalPending,
    oversizedHead: shown,
    messages: [],
  });
  const id = commandId(head.id);
  const from =
    shown.from !== undefined && shown.sender !== undefined
      ? `It is from ${senderLabel(shown.from, shown.sender, shown.via)}. `
      : '';
  if (head.list !== undefined) {
    // The listing fetches the head and what follows (FIFO) filled to the client's cap: one page
    // when it fits, else its parts, the last one with the messages behind it.
    const how = fitsPage
      ? `It fits one listing: fetch it and the messages behind it with complete bodies, oldest first: ${head.list} (it names the command that continues)`
      : `It is larger than one listing page: fetch it and the messages behind it, oldest first: ${head.list} (it names the command that continues; ${PARTS_NOTE})`;
    const instruction = `${from}${PROVENANCE_NOTE} ${how}, then ${REPLY_AND_ARCHIVE[0]?.toLowerCase()}${REPLY_AND_ARCHIVE.slice(1)}`;
    return `${header}\n${json}\n${instruction}`;
  }
  const where = id === '<id>' ? ' (the id is in oversizedHead)' : '';
  // The list is chained to the reply, not to the read: a read part and a page each fill a
  // client's output cap, so together they would be cut (measured with Codex, issue 13 item 5).
  const later =
    totalPending > 1
      ? ` Later messages stay pending: fetch the next batch in the same command as that reply: sluice message reply ${id} --archive -m "…" && ${LIST_COMMAND} --since ${id}`
      : '';
  const instruction = `${from}${PROVENANCE_NOTE} Read it whole with: ${readCommand(id)} --json${where} (a large body comes in parts: run each "next"), then reply and archive in one process: sluice message reply ${id} --archive -m "…".${later}`;
  return `${header}\n${json}\n${instruction}`;
}

/** Last resort before '': counts only, no caller-supplied text at all. */
function minimalText(totalPending: number): string {
  const json = jsonOneLine({
    schema: SCHEMA,
    totalPending,
    included: 0,
    overflow: totalPending,
    oversizedHead: null,
    messages: [],
  });
  return `[sluice] ${totalPending} pending message(s), too large to show here.\n${json}\nList them: ${LIST_COMMAND}`;
}

/** Input of {@link renderMetadataNotice}. */
export interface MetadataNoticeInput {
  agent: string;
  totalPending: number;
  oldest: { id: string; from: string; sender: SenderRelation; via?: MessageOrigin; createdAt: string } | null;
}

/**
 * The short notification for unknown or custom transports: the count, the oldest sender and the
 * command that lists the bodies. '' when nothing is pending.
 */
export function renderMetadataNotice(input: MetadataNoticeInput): string {
  const totalPending = Math.max(0, Math.floor(input.totalPending) || 0);
  if (totalPending === 0) return '';
  const { oldest } = input;
  let first = `[sluice] ${totalPending} pending message(s) for ${inlineLabel(input.agent)}`;
  if (oldest !== null) {
    const id = PLAIN_ID.test(oldest.id) ? `, id ${oldest.id}` : '';
    first += `; oldest from ${senderLabel(oldest.from, oldest.sender, oldest.via)} at ${inlineLabel(oldest.createdAt)}${id}`;
  }
  return `${first}.\nList them with complete bodies: ${LIST_COMMAND}`;
}
