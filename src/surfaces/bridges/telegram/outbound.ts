import { type Api, InputFile } from 'grammy';
import { splitIntoParts } from '../../../core/chat-parts.js';
import { SluiceError } from '../../../core/errors.js';
import type { HostContext } from '../../../host/identity/index.js';
import { readMediaBytes } from '../../../host/media/index.js';
import type { AttachmentRef } from '../../../host/messages/index.js';
import {
  advanceOutboundCursor,
  type OutboundMessage,
  outboundAfter,
  outboundCursor,
  recordSentPart,
  sentParts,
} from '../../../host/telegram/index.js';
import { type FaultCounts, faultText, isRefusal, isServerError, isStoreFault } from './faults.js';
import { startPump } from './pump.js';
import { TELEGRAM_TEXT_LIMIT } from './replies.js';
/** A body needing more parts than this goes out as one text document instead of a wall of parts. */
export const MAX_TEXT_PARTS = 5;
/** Telegram shows photos up to 10 MB; larger images go as documents. */
const PHOTO_LIMIT = 10 * 1024 * 1024;
const PHOTO_MIME = new Set(['image/jpeg', 'image/png', 'image/webp']);

type Chat = OutboundMessage['chats'][number];

/** One unit of what a message becomes in a chat, numbered so a restart resumes after the last sent. */
type Part =
  | { kind: 'text'; text: string }
  | { kind: 'document'; name: string; bytes: Uint8Array; caption: string }
  | { kind: 'attachment'; ref: AttachmentRef };

/**
 * What one agent message becomes in one chat: its body as ordered text parts whose concatenation
 * is the body (a "from NAME:" line first when the agent is not the one this chat talks to), or as
 * a text document when that would take more than {@link MAX_TEXT_PARTS} parts; then each
 * attachment.
 */
export function partsFor(message: OutboundMessage, chat: Chat): Part[] {
  const label = chat.currentAgentId === message.agentId ? '' : `from ${message.agentName}:\n`;
  const text = splitIntoParts(label + message.body, TELEGRAM_TEXT_LIMIT);
  const parts: Part[] =
    text.length <= MAX_TEXT_PARTS
      ? text.map((t) => ({ kind: 'text', text: t }))
      : [
          {
            kind: 'document',
            name: `message-${message.messageId}.txt`,
            bytes: new TextEncoder().encode(message.body),
            caption: `${label}(${message.body.length} characters, sent as a file)`,
          },
        ];
  for (const ref of message.attachments) parts.push({ kind: 'attachment', ref });
  return parts;
}

async function sendPart(host: HostContext, api: Api, chat: Chat, part: Part): Promise<void> {
  const chatId = chat.chatId;
  if (part.kind === 'text') {
    await api.sendMessage(chatId, part.text);
    return;
  }
  if (part.kind === 'document') {
    await api.sendDocument(chatId, new InputFile(part.bytes, part.name), { caption: part.caption });
    return;
  }
  let bytes: Uint8Array;
  try {
    ({ bytes } = await readMediaBytes(host, chat.person, part.ref.attachment_id));
  } catch (err) {
    if (!(err instanceof SluiceError) || isStoreFault(err)) throw err;
    await api.sendMessage(chatId, `(the attachment ${part.ref.name} could not be sent: ${err.message})`);
    return;
  }
  const file = new InputFile(bytes, part.ref.name);
  if (PHOTO_MIME.has(part.ref.mime) && bytes.length <= PHOTO_LIMIT) await api.sendPhoto(chatId, file);
  else await api.sendDocument(chatId, file);
}

export interface OutboundPump {
  /** Runs a scan now (or once more after the running one). */
  poke(): void;
  /** Waits for the running scan, then stops. */
  stop(): Promise<void>;
}

/**
 * Forwards agent messages in DMs with paired persons to their chats. Every part is recorded after
 * Telegram accepted it, and the scan cursor moves only past messages sent whole, so a restart
 * (kill -9 included) resumes without losing a part; only a part in flight at the kill can repeat.
 * A part Telegram refuses (4xx but 429) is skipped at once; a part Telegram keeps failing on (5xx)
 * is skipped after `partAttempts` scans, so it cannot hold back the messages behind it. Telegram
 * out of reach, a 429 and store errors are never a reason to skip: the scan stops and resumes at
 * the same part after a backoff.
 */
export function startOutboundPump(options: {
  host: HostContext;
  api: Api;
  botId: string;
  log(line: string): void;
  /** Scans one part may fail in (Telegram answering 5xx) before it is skipped. */
  partAttempts: number;
  counts: FaultCounts;
  /** A scan failed: nothing more is scanned until the caller pokes again. */
  onError(err: unknown): void;
  /** A scan reached the end of the log. */
  onCaughtUp(): void;
}): OutboundPump {
  const { host, api, botId, counts } = options;
  // Failed tries per part (message, chat, index), in memory: a restart gives every part a fresh bound.
  const failedTries = new Map<string, number>();

  const sendMessageToChat = async (message: OutboundMessage, chat: Chat) => {
    const done = await sentParts(host, message.messageId, chat.chatId);
    const parts = partsFor(message, chat);
    for (const [index, part] of parts.entries()) {
      if (pump.stopped) return false;
      if (done.has(index)) continue;
      const key = `${message.messageId} ${chat.chatId} ${index}`;
      try {
        await sendPart(host, api, chat, part);
      } catch (err) {
        if (isStoreFault(err)) throw err;
        const what = `message ${message.messageId} part ${index + 1} to chat ${chat.chatId}`;
        if (isRefusal(err)) {
          counts.refusedReplies++;
          options.log(
            `${what} refused by Telegram (${faultText(err)}); skipped, ${counts.refusedReplies} refused so far`,
          );
        } else if (!isServerError(err)) {
          // Telegram out of reach, or asking to wait (429): weather, not this part's fault. The
          // scan stops and resumes at this part after a backoff, however long the outage.
          throw err;
        } else {
          const tries = (failedTries.get(key) ?? 0) + 1;
          if (tries < options.partAttempts) {
            failedTries.set(key, tries);
            throw err;
          }
          counts.abandonedParts++;
          options.log(
            `${what} gave up after ${tries} tries: ${faultText(err)}; skipped, ${counts.abandonedParts} given up so far`,
          );
        }
      }
      failedTries.delete(key);
      await recordSentPart(host, message.messageId, chat.chatId, index);
    }
    return true;
  };

  const scan = async () => {
    let cursor = await outboundCursor(host, botId);
    for (;;) {
      const { messages, lastSeq } = await outboundAfter(host, cursor);
      if (lastSeq === cursor) return;
      for (const message of messages) {
        for (const chat of message.chats) {
          if (!(await sendMessageToChat(message, chat))) return;
        }
        await advanceOutboundCursor(host, botId, message.eventSeq);
      }
      await advanceOutboundCursor(host, botId, lastSeq);
      cursor = lastSeq;
    }
  };

  const pump = startPump(scan, options);

  return { poke: pump.poke, stop: pump.stop };
}
