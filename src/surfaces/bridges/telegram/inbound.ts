import type { Context } from 'grammy';
import { SluiceError } from '../../../core/errors.js';
import type { HostContext } from '../../../host/context.js';
import { putMedia } from '../../../host/media.js';
import { sendMessage } from '../../../host/messages.js';
import {
  agentNames,
  chooseTelegramAgent,
  inboundAlreadyStored,
  inboundKey,
  pairTelegramUser,
  type TelegramSender,
  telegramSender,
  unpairTelegramUser,
} from '../../../host/telegram.js';

/** The Bot API serves bots files of at most 20 MB (getFile). */
export const TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024;

export interface InboundOptions {
  host: HostContext;
  botId: string;
  /** Builds the download URL of a file path from getFile (it carries the bot token). */
  fileUrl(filePath: string): string;
  defaultAgent?: string | undefined;
  log(line: string): void;
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

function megabytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** Thrown for a file the bridge will not fetch; the user gets its message, nothing is stored. */
class FileRefused extends Error {}

async function download(options: InboundOptions, c: Context, file: IncomingFile): Promise<Uint8Array> {
  const tooLarge = (size: number) =>
    new FileRefused(
      `That file is ${megabytes(size)}; a Telegram bot can fetch at most 20 MB. Nothing was sent — share a link or a smaller file.`,
    );
  if (file.size !== undefined && file.size > TELEGRAM_DOWNLOAD_LIMIT) throw tooLarge(file.size);
  const info = await c.api.getFile(file.fileId);
  if (!info.file_path) throw new FileRefused('Telegram did not make that file available. Nothing was sent.');
  const response = await fetch(options.fileUrl(info.file_path));
  if (!response.ok || !response.body) throw new Error(`file download failed with HTTP ${response.status}`);
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    total += chunk.length;
    if (total > TELEGRAM_DOWNLOAD_LIMIT) throw tooLarge(total);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function reply(c: Context, text: string): Promise<void> {
  if (c.chat) await c.api.sendMessage(c.chat.id, text);
}

async function handleCommand(
  options: InboundOptions,
  c: Context,
  sender: TelegramSender | undefined,
  text: string,
): Promise<boolean> {
  const [rawCommand = '', ...args] = text.trim().split(/\s+/);
  const command = rawCommand.replace(/@.*$/, '').toLowerCase();
  const from = c.from;
  if (!from || !c.chat) return true;
  const userId = String(from.id);
  if (command === '/pair' || (command === '/start' && args.length > 0)) {
    const code = args[0] ?? '';
    if (code === '') {
      await reply(c, 'Send /pair followed by the code that `sluice bridge telegram pair PERSON` printed.');
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
      await reply(c, `Paired: you are ${paired.person.name} here.${to}\n${HELP}`);
    } catch (err) {
      if (!(err instanceof SluiceError)) throw err;
      // Replayed after a crash: the code was used for exactly this pairing.
      if (sender) await reply(c, `You are paired as ${sender.person.name}.`);
      else await reply(c, 'That code is not valid: codes work once, for 10 minutes.');
    }
    return true;
  }
  if (!sender) return false;
  switch (command) {
    case '/unpair':
      await unpairTelegramUser(options.host, userId);
      options.log(`unpaired Telegram user ${userId}`);
      await reply(c, 'Unpaired. Nothing more from this account reaches Sluice.');
      return true;
    case '/agents': {
      const names = await agentNames(options.host);
      const current = sender.agent?.name;
      await reply(
        c,
        names.length === 0
          ? 'There are no agents yet.'
          : names.map((n) => (n === current ? `${n} (current)` : n)).join('\n'),
      );
      return true;
    }
    case '/to': {
      const name = args[0];
      if (!name) {
        await reply(c, 'Send /to NAME; /agents lists the agents.');
        return true;
      }
      try {
        const agent = await chooseTelegramAgent(options.host, userId, name);
        await reply(c, `Your messages now go to ${agent.name}.`);
      } catch (err) {
        if (!(err instanceof SluiceError)) throw err;
        await reply(c, `There is no agent named ${name}; /agents lists them.`);
      }
      return true;
    }
    case '/start':
    case '/help':
      await reply(c, HELP);
      return true;
    default:
      return false;
  }
}

/**
 * Handles one update. Only paired users reach Sluice; a stranger gets one line and nothing is
 * stored. A message is stored under its update's idempotency key, so an update fetched again after
 * a crash is recognised and stored once. Store errors propagate: the caller retries the update
 * before confirming it, so no update is skipped.
 */
export async function handleUpdate(options: InboundOptions, c: Context): Promise<void> {
  const message = c.message;
  if (!message || !c.from || !c.chat) return;
  if (c.chat.type !== 'private') {
    await reply(c, 'This bot only works in a private chat.');
    return;
  }
  const sender = await telegramSender(options.host, String(c.from.id));
  const text = message.text ?? '';
  if (text.startsWith('/') && (await handleCommand(options, c, sender, text))) return;
  if (!sender) {
    await reply(c, STRANGER);
    return;
  }
  if (!sender.agent) {
    await reply(c, 'Choose an agent first: /to NAME (/agents lists them).');
    return;
  }
  const updateId = c.update.update_id;
  if (await inboundAlreadyStored(options.host, sender.person, options.botId, updateId)) return;
  const file = incomingFile(c);
  if (!file && message.text === undefined) {
    await reply(c, 'Only text, photos, files, voice messages and audio reach your agent.');
    return;
  }
  const attachmentIds: string[] = [];
  if (file) {
    let bytes: Uint8Array;
    try {
      bytes = await download(options, c, file);
    } catch (err) {
      if (!(err instanceof FileRefused)) throw err;
      await reply(c, err.message);
      return;
    }
    const stored = await putMedia(options.host, sender.person, bytes, file.name);
    attachmentIds.push(stored.attachment_id);
  }
  try {
    await sendMessage(options.host, sender.person, {
      to: sender.agent.name,
      body: message.text ?? message.caption ?? '',
      attachmentIds,
      idempotencyKey: inboundKey(options.botId, updateId),
    });
  } catch (err) {
    if (!(err instanceof SluiceError) || err.code === 'unavailable') throw err;
    await reply(c, `Not sent: ${err.message}`);
  }
}
