import type { Context } from 'grammy';
import type { Update } from 'grammy/types';
import { SluiceError } from '../../../core/errors.js';
import type { HostContext } from '../../../host/identity/index.js';
import { putMedia } from '../../../host/media/index.js';
import { sendMessage } from '../../../host/messages/index.js';
import {
  agentNames,
  chooseTelegramAgent,
  inboundAlreadyStored,
  inboundKey,
  pairTelegramUser,
  type TelegramSender,
  telegramSender,
  trackTelegramMessage,
  unpairTelegramUser,
} from '../../../host/telegram/index.js';
import {
  DOWNLOAD_DEADLINE_MS,
  downloadFile,
  FileRefused,
  NOT_FETCHED,
  TELEGRAM_DOWNLOAD_LIMIT,
  tooLarge,
} from './download.js';
import { type FaultCounts, faultText, isRefusal, isStoreFault } from './faults.js';
import { malformedField, UNREADABLE } from './message-shape.js';
import { callDeadline, echoName, type Replies, TELEGRAM_TEXT_LIMIT } from './replies.js';

export interface InboundOptions {
  host: HostContext;
  botId: string;
  /** Builds the download URL of a file path from getFile (it carries the bot token). */
  fileUrl(filePath: string): string;
  /** The API root's origin: the only place a file download may be redirected to. */
  apiOrigin: string;
  /** The deadline of one file download (default {@link DOWNLOAD_DEADLINE_MS}). */
  downloadDeadlineMs?: number | undefined;
  defaultAgent?: string | undefined;
  replies: Replies;
  counts: FaultCounts;
  log(line: string): void;
  /** A person's message was tracked for reactions (its status may already have moved). */
  onTracked?(channelId: string): void;
}

const STRANGER = 'This bot belongs to a Sluice host. Ask its owner for a pairing code, then send /pair CODE.';
const HELP = [
  'Write here and your message goes to your current agent; photos, files, voice and audio go as attachments.',
  '/to NAME — talk to another agent',
  '/agents — list the agents',
  '/unpair — stop using this bot from this account',
].join('\n');

/** A file a Telegram message carries: what to fetch and what to call it. */
interface IncomingFile {
  fileId: string;
  size: number | undefined;
  name: string;
}

function incomingFile(c: Context): IncomingFile | undefined {
  const m = c.message;
  if (!m) return undefined;
  const id = c.update.update_id;
  if (m.photo && m.photo.length > 0) {
    // Telegram lists a photo's sizes smallest first: the last is the original resolution.
    const largest = m.photo[m.photo.length - 1] as (typeof m.photo)[number];
    return { fileId: largest.file_id, size: largest.file_size, name: `photo-${id}.jpg` };
  }
  if (m.document) {
    return {
      fileId: m.document.file_id,
      size: m.document.file_size,
      name: m.document.file_name ?? `file-${id}`,
    };
  }
  if (m.voice) return { fileId: m.voice.file_id, size: m.voice.file_size, name: `voice-${id}.ogg` };
  if (m.audio) {
    return { fileId: m.audio.file_id, size: m.audio.file_size, name: m.audio.file_name ?? `audio-${id}.mp3` };
  }
  return undefined;
}

async function download(options: InboundOptions, c: Context, file: IncomingFile): Promise<Uint8Array> {
  if (file.size !== undefined && file.size > TELEGRAM_DOWNLOAD_LIMIT) throw tooLarge(file.size);
  let filePath: string | undefined;
  try {
    ({ file_path: filePath } = await c.api.getFile(file.fileId, callDeadline()));
  } catch (err) {
    if (!isRefusal(err)) throw err;
    throw new FileRefused(NOT_FETCHED, `getFile refused by Telegram (${faultText(err)})`);
  }
  if (!filePath) throw new FileRefused(NOT_FETCHED, 'getFile gave no file path');
  return downloadFile(options.fileUrl(filePath), {
    origin: options.apiOrigin,
    deadlineMs: options.downloadDeadlineMs ?? DOWNLOAD_DEADLINE_MS,
    limit: TELEGRAM_DOWNLOAD_LIMIT,
  });
}

/** The `/agents` answer: one name a line, as many as fit in one message, then how many more. */
function agentList(names: string[], current: string | undefined): string {
  if (names.length === 0) return 'There are no agents yet.';
  const lines: string[] = [];
  let length = 0;
  for (const [index, name] of names.entries()) {
    const line = name === current ? `${name} (current)` : name;
    // Room for this line and a closing "… and N more" line.
    if (length + line.length + 40 > TELEGRAM_TEXT_LIMIT) {
      lines.push(`… and ${names.length - index} more`);
      break;
    }
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join('\n');
}

/** Answers in the update's chat: `reply` to a paired sender, `replyUnpaired` through the gate. */
interface Answer {
  reply(text: string): Promise<void>;
  replyUnpaired(text: string): Promise<void>;
}

async function handleCommand(
  options: InboundOptions,
  c: Context,
  sender: TelegramSender | undefined,
  text: string,
  { reply, replyUnpaired }: Answer,
): Promise<boolean> {
  const [rawCommand = '', ...args] = text.trim().split(/\s+/);
  const command = rawCommand.replace(/@.*$/, '').toLowerCase();
  const from = c.from;
  if (!from || !c.chat) return true;
  const userId = String(from.id);
  if (command === '/pair' || (command === '/start' && args.length > 0)) {
    const code = args[0] ?? '';
    if (code === '') {
      await (sender ? reply : replyUnpaired)(
        'Send /pair followed by the code that `sluice bridge telegram pair PERSON` printed.',
      );
      return true;
    }
    try {
      const paired = await pairTelegramUser(options.host, {
        telegramUserId: userId,
        chatId: String(c.chat.id),
        code,
        defaultAgent: options.defaultAgent,
      });
      options.log(`paired Telegram user ${userId} as ${paired.person.name}`);
      const to = paired.agent
        ? ` Your messages go to ${paired.agent.name}.`
        : ' Choose an agent with /to NAME.';
      await reply(`Paired: you are ${paired.person.name} here.${to}\n${HELP}`);
    } catch (err) {
      if (!(err instanceof SluiceError) || isStoreFault(err)) throw err;
      // Replayed after a crash: the code was used for exactly this pairing.
      if (sender) await reply(`You are paired as ${sender.person.name}.`);
      else await replyUnpaired('That code is not valid: codes work once, for 10 minutes.');
    }
    return true;
  }
  if (!sender) return false;
  switch (command) {
    case '/unpair':
      await unpairTelegramUser(options.host, userId);
      options.log(`unpaired Telegram user ${userId}`);
      await reply('Unpaired. Nothing more from this account reaches Sluice.');
      return true;
    case '/agents': {
      await reply(agentList(await agentNames(options.host), sender.agent?.name));
      return true;
    }
    case '/to': {
      const name = args[0];
      if (!name) {
        await reply('Send /to NAME; /agents lists the agents.');
        return true;
      }
      try {
        const agent = await chooseTelegramAgent(options.host, userId, name);
        await reply(`Your messages now go to ${agent.name}.`);
      } catch (err) {
        if (!(err instanceof SluiceError) || isStoreFault(err)) throw err;
        await reply(`There is no agent named ${echoName(name)}; /agents lists them.`);
      }
      return true;
    }
    case '/start':
    case '/help':
      await reply(HELP);
      return true;
    default:
      return false;
  }
}

/**
 * Handles one update. Only paired users reach Sluice; a stranger or a group gets at most one line
 * (see {@link Replies.sendToUnpaired}) and nothing is stored. A message is stored under its
 * update's idempotency key, so an update fetched again after a crash is recognised and stored
 * once. A reply Telegram refuses, or a file it will not hand over, ends that reply or file, not
 * the update. Store errors and other transient faults propagate: the caller tries the update again
 * (store faults without a bound) before confirming it.
 */
export async function handleUpdate(options: InboundOptions, c: Context): Promise<void> {
  const message = c.message;
  if (!message || !c.from || !c.chat) return;
  const chatId = c.chat.id;
  const answer: Answer = {
    reply: (text) => options.replies.send(chatId, text),
    replyUnpaired: (text) => options.replies.sendToUnpaired(chatId, text, false),
  };
  if (c.chat.type !== 'private') {
    await options.replies.sendToUnpaired(chatId, 'This bot only works in a private chat.', true);
    return;
  }
  const sender = await telegramSender(options.host, String(c.from.id));
  const malformed = malformedField(message);
  if (malformed !== undefined) {
    // Permanent for this update: trying it again reads the same fields.
    options.log(
      `update ${c.update.update_id} malformed: ${malformed} is not what Telegram documents; confirmed unhandled`,
    );
    if (sender) await answer.reply(UNREADABLE);
    return;
  }
  const text = message.text ?? '';
  if (text.startsWith('/') && (await handleCommand(options, c, sender, text, answer))) return;
  if (!sender) {
    await options.replies.sendToUnpaired(chatId, STRANGER, true);
    return;
  }
  const { reply } = answer;
  if (!sender.agent) {
    await reply('Choose an agent first: /to NAME (/agents lists them).');
    return;
  }
  const updateId = c.update.update_id;
  const track = async (stored: { message_id: string; channel_id: string }) => {
    await trackTelegramMessage(options.host, {
      messageId: stored.message_id,
      channelId: stored.channel_id,
      chatId: String(chatId),
      telegramMessageId: message.message_id,
      person: sender.person,
    });
    options.onTracked?.(stored.channel_id);
  };
  const already = await inboundAlreadyStored(options.host, sender.person, options.botId, updateId);
  if (already) {
    // Stored before a crash that came before its tracking: track it now (a no-op if it was).
    await track(already);
    return;
  }
  const file = incomingFile(c);
  if (!file && message.text === undefined) {
    await reply('Only text, photos, files, voice messages and audio reach your agent.');
    return;
  }
  const attachmentIds: string[] = [];
  if (file) {
    let bytes: Uint8Array;
    try {
      bytes = await download(options, c, file);
    } catch (err) {
      if (!(err instanceof FileRefused)) throw err;
      options.counts.refusedFiles++;
      options.log(
        `file in update ${updateId} not stored: ${err.reason}; ${options.counts.refusedFiles} refused so far`,
      );
      await reply(err.message);
      return;
    }
    try {
      const stored = await putMedia(options.host, sender.person, bytes, file.name);
      attachmentIds.push(stored.attachment_id);
    } catch (err) {
      // Refused by the media store (its size limit, say): permanent for this file.
      if (!(err instanceof SluiceError) || isStoreFault(err)) throw err;
      await reply(`Not sent: ${err.message}`);
      return;
    }
  }
  try {
    const sent = await sendMessage(options.host, sender.person, {
      to: sender.agent.name,
      body: message.text ?? message.caption ?? '',
      attachmentIds,
      idempotencyKey: inboundKey(options.botId, updateId),
      // A model reading it is told it came through the bridge (docs/security.md, "Provenance").
      origin: 'telegram',
    });
    // Its status is shown on it as a reaction from now on (reactions.ts).
    await track(sent);
  } catch (err) {
    if (!(err instanceof SluiceError) || isStoreFault(err)) throw err;
    await reply(`Not sent: ${err.message}`);
  }
}

/**
 * Tells a paired sender, once and best effort, that an update the bridge gave up on (after its
 * bounded tries) did not reach their agent. Strangers are not told; nothing here throws.
 */
export async function reportAbandoned(options: InboundOptions, update: Update, cause: string): Promise<void> {
  const message = update.message;
  try {
    if (!message?.from || message.chat.type !== 'private') return;
    if (!(await telegramSender(options.host, String(message.from.id)))) return;
    await options.replies.send(
      message.chat.id,
      `That message did not reach your agent (${cause}). Nothing was sent — send it again.`,
    );
  } catch {
    // Best effort: the give-up itself is already logged.
  }
}
