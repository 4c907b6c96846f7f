import { createHash } from 'node:crypto';
import { SluiceError } from '../../core/errors.js';
import { findChannelById, listActiveMembers } from '../../store/ops/channels.js';
import { lastEventSeq, listEventsAfter } from '../../store/ops/events.js';
import { findIdempotencyKey } from '../../store/ops/idempotency.js';
import { findMessageById } from '../../store/ops/messages.js';
import { getMeta, setMeta } from '../../store/ops/meta.js';
import { findPrincipalById, listPrincipals } from '../../store/ops/principals.js';
import {
  deleteTelegramLink,
  findTelegramLink,
  insertPairCode,
  recordTelegramPart,
  sentTelegramParts,
  setTelegramLinkAgent,
  type TelegramLinkRow,
  takePairCode,
  telegramLinksOfPersons,
  upsertTelegramLink,
} from '../../store/ops/telegram.js';
import { type HostContext, nowIso } from '../identity/context.js';
import { type Principal, resolveAgent, resolvePrincipal } from '../identity/principals.js';
import { type AttachmentRef, parseJsonArray } from '../messages/projection.js';

/** How long a pairing code works (DESIGN §8: ten minutes, single use). */
export const PAIR_CODE_TTL_MS = 10 * 60_000;

// No 0/O or 1/I: a code is read off one screen and typed on another.
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const CODE_LENGTH = 8;

function hashCode(code: string): string {
  return createHash('sha256').update(`telegram-pair:${code}`).digest('hex');
}

/** Mints a one-time pairing code for a person; only its hash is stored. */
export async function createPairCode(
  ctx: HostContext,
  personName: string,
): Promise<{ code: string; person: string; expiresAt: string }> {
  const person = await resolvePrincipal(ctx, personName);
  if (person.kind !== 'person') {
    throw new SluiceError('invalid_params', `${person.name} is an agent: only a person pairs a phone`);
  }
  const bytes = ctx.random(CODE_LENGTH);
  const code = Array.from(bytes, (b) => CODE_ALPHABET[b % CODE_ALPHABET.length]).join('');
  const now = ctx.now();
  const expiresAt = new Date(now.getTime() + PAIR_CODE_TTL_MS).toISOString();
  await ctx.store.transaction((trx) =>
    insertPairCode(trx, {
      code_hash: hashCode(code),
      person_id: person.id,
      created_at: now.toISOString(),
      expires_at: expiresAt,
    }),
  );
  return { code, person: person.name, expiresAt };
}

/** A paired Telegram user: the link and the person they act as. */
export interface TelegramSender {
  link: TelegramLinkRow;
  person: Principal;
  /** The agent their messages go to, if one is chosen and still exists. */
  agent: Principal | undefined;
}

/**
 * Pairs a Telegram user with the person a code was minted for. The code is used up in the same
 * transaction as the link is written, so it works exactly once.
 */
export async function pairTelegramUser(
  ctx: HostContext,
  input: { telegramUserId: string; chatId: string; code: string; defaultAgent?: string | undefined },
): Promise<TelegramSender> {
  const code = input.code.trim().toUpperCase();
  const defaultAgent = input.defaultAgent ? await resolveAgent(ctx, input.defaultAgent) : undefined;
  const at = nowIso(ctx);
  const personId = await ctx.store.transaction(async (trx) => {
    const person = await takePairCode(trx, hashCode(code), at);
    if (!person) return undefined;
    await upsertTelegramLink(trx, {
      telegram_user_id: input.telegramUserId,
      chat_id: input.chatId,
      person_id: person,
      agent_id: defaultAgent?.id ?? null,
      paired_at: at,
    });
    return person;
  });
  if (!personId) {
    throw new SluiceError('invalid_params', 'that code is not valid: codes work once, for 10 minutes');
  }
  return (await telegramSender(ctx, input.telegramUserId)) as TelegramSender;
}

/** Ends a pairing; false when the user was not paired. */
export async function unpairTelegramUser(ctx: HostContext, telegramUserId: string): Promise<boolean> {
  return ctx.store.transaction((trx) => deleteTelegramLink(trx, telegramUserId));
}

/** The paired sender behind a Telegram user id, or undefined for a stranger. */
export async function telegramSender(
  ctx: HostContext,
  telegramUserId: string,
): Promise<TelegramSender | undefined> {
  const link = await findTelegramLink(ctx.store.db, telegramUserId);
  if (!link) return undefined;
  const person = await findPrincipalById(ctx.store.db, link.person_id);
  if (!person) return undefined;
  const agent = link.agent_id ? await findPrincipalById(ctx.store.db, link.agent_id) : undefined;
  return { link, person, agent };
}

/** Points a paired user's messages at another agent (`/to NAME`). */
export async function chooseTelegramAgent(
  ctx: HostContext,
  telegramUserId: string,
  agentName: string,
): Promise<Principal> {
  const agent = await resolveAgent(ctx, agentName);
  await ctx.store.transaction((trx) => setTelegramLinkAgent(trx, telegramUserId, agent.id));
  return agent;
}

/** Every agent's name, for `/agents`. */
export async function agentNames(ctx: HostContext): Promise<string[]> {
  return (await listPrincipals(ctx.store.db, 'agent')).map((p) => p.name);
}

/**
 * The idempotency key an inbound update is stored under: the message and its update id commit in
 * one transaction, so an update fetched again after a crash is recognised and stored once.
 */
export function inboundKey(botId: string, updateId: number): string {
  return `telegram:${botId}:${updateId}`;
}

/** The message this person's update was already stored as, if it was. */
export async function inboundAlreadyStored(
  ctx: HostContext,
  person: Principal,
  botId: string,
  updateId: number,
): Promise<{ message_id: string; channel_id: string } | undefined> {
  const row = await findIdempotencyKey(ctx.store.db, person.id, inboundKey(botId, updateId));
  return row && { message_id: row.message_id, channel_id: row.channel_id };
}

/** An agent's message in a DM with a paired person, and the chats it goes to. */
export interface OutboundMessage {
  eventSeq: number;
  messageId: string;
  agentName: string;
  agentId: string;
  body: string;
  attachments: AttachmentRef[];
  chats: { chatId: string; person: Principal; currentAgentId: string | null }[];
}

function cursorKey(botId: string): string {
  return `telegram.${botId}.event_seq`;
}

/**
 * Where the bridge's outbound scan resumes. A bridge started for the first time starts at the end
 * of the log: it forwards what agents say from now on, not the history.
 */
export async function outboundCursor(ctx: HostContext, botId: string): Promise<number> {
  const stored = await getMeta(ctx.store.db, cursorKey(botId));
  if (stored !== undefined) return Number(stored);
  const start = await lastEventSeq(ctx.store.db);
  await ctx.store.transaction((trx) => setMeta(trx, cursorKey(botId), String(start)));
  return start;
}

export async function advanceOutboundCursor(ctx: HostContext, botId: string, seq: number): Promise<void> {
  await ctx.store.transaction((trx) => setMeta(trx, cursorKey(botId), String(seq)));
}

/**
 * The agent messages after `afterSeq` that go to paired phones: messages an agent wrote in a DM
 * whose other member is a person with at least one paired Telegram user. Returns them in log order
 * with the seq to resume after (also past events that send nothing).
 */
export async function outboundAfter(
  ctx: HostContext,
  afterSeq: number,
  limit = 200,
): Promise<{ messages: OutboundMessage[]; lastSeq: number }> {
  const events = await listEventsAfter(ctx.store.db, afterSeq, limit);
  const messages: OutboundMessage[] = [];
  for (const event of events) {
    if (event.kind !== 'message.created' || !event.channel_id || !event.message_id) continue;
    const channel = await findChannelById(ctx.store.db, event.channel_id);
    if (channel?.kind !== 'dm') continue;
    const message = await findMessageById(ctx.store.db, event.message_id);
    if (!message || message.deleted_at) continue;
    const members = await listActiveMembers(ctx.store.db, channel.id);
    const author = members.find((m) => m.id === message.author_id);
    if (author?.kind !== 'agent') continue;
    const persons = members.filter((m) => m.kind === 'person');
    const links = await telegramLinksOfPersons(
      ctx.store.db,
      persons.map((p) => p.id),
    );
    if (links.length === 0) continue;
    const chats = [];
    for (const link of links) {
      const person = await findPrincipalById(ctx.store.db, link.person_id);
      if (person) chats.push({ chatId: link.chat_id, person, currentAgentId: link.agent_id });
    }
    messages.push({
      eventSeq: Number(event.seq),
      messageId: message.id,
      agentName: author.name,
      agentId: author.id,
      body: message.body,
      attachments: parseJsonArray(message.attachments) as AttachmentRef[],
      chats,
    });
  }
  const last = events[events.length - 1];
  return { messages, lastSeq: last ? Number(last.seq) : afterSeq };
}

/** The parts of a message already sent to a chat (so a restart does not send them again). */
export function sentParts(ctx: HostContext, messageId: string, chatId: string): Promise<Set<number>> {
  return sentTelegramParts(ctx.store.db, messageId, chatId);
}

export async function recordSentPart(
  ctx: HostContext,
  messageId: string,
  chatId: string,
  part: number,
): Promise<void> {
  const at = nowIso(ctx);
  await ctx.store.transaction((trx) =>
    recordTelegramPart(trx, { message_id: messageId, chat_id: chatId, part, sent_at: at }),
  );
}
