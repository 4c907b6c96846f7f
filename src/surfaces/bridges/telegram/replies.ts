import type { Api } from 'grammy';
import { sliceWhole } from '../../../core/text.js';
import { type FaultCounts, faultText, isRefusal } from './faults.js';

/** Telegram's cap on one text message, in characters (UTF-16 units). */
export const TELEGRAM_TEXT_LIMIT = 4096;
/** How long one Bot API call made while handling an update may take before it counts as failed. */
export const API_CALL_DEADLINE_MS = 30_000;
/** A chat whose sender is not paired (a stranger, a group) gets its one line at most this often. */
export const STRANGER_LINE_EVERY_MS = 60 * 60_000;
/** Lines to unpaired chats, all of them together, per minute; the rest go unanswered. */
export const STRANGER_LINES_PER_MINUTE = 20;
/** Chats remembered for {@link STRANGER_LINE_EVERY_MS}; the oldest are forgotten first. */
const REMEMBERED_CHATS = 10_000;
/** Principal names are at most 64 characters: a longer "name" is echoed cut to this. */
const ECHOED_NAME_LIMIT = 64;

/** grammY types its signal with its own AbortSignal shim; Node's is the same at run time. */
export type ApiSignal = Parameters<Api['sendMessage']>[3];

/** A signal that ends one Bot API call after `ms` (grammY then throws an HttpError: retryable). */
export function callDeadline(ms = API_CALL_DEADLINE_MS): ApiSignal {
  return AbortSignal.timeout(ms) as ApiSignal;
}

/** A text within Telegram's limit: cut on a code-point boundary, ending with "…" when cut. */
export function fitText(text: string, limit = TELEGRAM_TEXT_LIMIT): string {
  return text.length <= limit ? text : `${sliceWhole(text, limit - 1)}…`;
}

/** What a name someone typed becomes when a reply repeats it: at most 64 characters plus "…". */
export function echoName(name: string): string {
  return name.length <= ECHOED_NAME_LIMIT ? name : `${sliceWhole(name, ECHOED_NAME_LIMIT)}…`;
}

/**
 * Decides whether an unpaired chat gets a line: once per chat per {@link STRANGER_LINE_EVERY_MS}
 * (for the "this bot belongs to…" lines) and at most {@link STRANGER_LINES_PER_MINUTE} a minute
 * for every unpaired chat together, so strangers cannot make the bot spend its sending allowance
 * or use it to message people. Kept in memory: a restarted bridge may answer a chat once more.
 */
export class StrangerGate {
  private readonly lastLine = new Map<string, number>();
  private windowStart = Number.NEGATIVE_INFINITY;
  private inWindow = 0;
  private reportedWindow = Number.NEGATIVE_INFINITY;

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * 'send', 'repeat' (this chat had its line already) or 'busy' (the minute's allowance is spent;
   * `first` tells whether this is the window's first such refusal, to log it once).
   */
  admit(chatId: string, oncePerChat: boolean): { verdict: 'send' | 'repeat' | 'busy'; first: boolean } {
    const now = this.now();
    const last = this.lastLine.get(chatId);
    if (oncePerChat && last !== undefined && now - last < STRANGER_LINE_EVERY_MS) {
      return { verdict: 'repeat', first: false };
    }
    if (now - this.windowStart >= 60_000) {
      this.windowStart = now;
      this.inWindow = 0;
    }
    if (this.inWindow >= STRANGER_LINES_PER_MINUTE) {
      const first = this.reportedWindow !== this.windowStart;
      this.reportedWindow = this.windowStart;
      return { verdict: 'busy', first };
    }
    this.inWindow++;
    return { verdict: 'send', first: false };
  }

  /** Notes that a chat had its line (sent or refused for good), so it gets no other for a while. */
  answered(chatId: string): void {
    this.lastLine.delete(chatId);
    this.lastLine.set(chatId, this.now());
    if (this.lastLine.size > REMEMBERED_CHATS) {
      const oldest = this.lastLine.keys().next().value as string;
      this.lastLine.delete(oldest);
    }
  }
}

/** How the bridge answers in a chat while handling an update. */
export interface Replies {
  /**
   * Sends one text (fitted to Telegram's limit). A refusal (4xx but 429) is permanent for this
   * reply: logged with a count and swallowed. Anything else (network, 5xx, deadline) throws, and
   * the update is tried again within its bound.
   */
  send(chatId: number, text: string): Promise<void>;
  /**
   * Like {@link send}, for a chat whose sender is not paired: `oncePerChat` lines at most once per
   * chat per hour, and all of them within the per-minute allowance; others are not sent.
   */
  sendToUnpaired(chatId: number, text: string, oncePerChat: boolean): Promise<void>;
}

export function createReplies(options: {
  api: Api;
  counts: FaultCounts;
  log(line: string): void;
  gate?: StrangerGate;
}): Replies {
  const { api, counts, log } = options;
  const gate = options.gate ?? new StrangerGate();
  const send = async (chatId: number, text: string) => {
    try {
      await api.sendMessage(chatId, fitText(text), undefined, callDeadline());
    } catch (err) {
      if (!isRefusal(err)) throw err;
      counts.refusedReplies++;
      log(
        `reply to chat ${chatId} refused by Telegram (${faultText(err)}); dropped, ${counts.refusedReplies} refused so far`,
      );
    }
  };
  return {
    send,
    async sendToUnpaired(chatId, text, oncePerChat) {
      const { verdict, first } = gate.admit(String(chatId), oncePerChat);
      if (verdict === 'send') {
        // Marked once the line went out or was refused for good; a failed try may try again.
        await send(chatId, text);
        if (oncePerChat) gate.answered(String(chatId));
        return;
      }
      if (verdict === 'busy') {
        counts.unansweredStrangers++;
        if (first) {
          log(
            `unpaired chats not answered for the rest of this minute: ${STRANGER_LINES_PER_MINUTE} lines a minute at most (${counts.unansweredStrangers} unanswered so far)`,
          );
        }
      }
    },
  };
}
