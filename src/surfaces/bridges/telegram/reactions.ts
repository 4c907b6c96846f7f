import type { Api } from 'grammy';
import type { ReactionTypeEmoji } from 'grammy/types';
import type { HostContext } from '../../../host/identity/index.js';
import type { RecipientState } from '../../../host/messages/index.js';
import {
  channelsMovedAfter,
  markReactionShown,
  type ReactionChange,
  reactionChanges,
  reactionCursorStart,
} from '../../../host/telegram/index.js';
import { type FaultCounts, faultText, isRefusal } from './faults.js';
import { startPump } from './pump.js';
import { callDeadline, fitText } from './replies.js';

type Emoji = ReactionTypeEmoji['emoji'];

/**
 * The reaction each status shows on the person's own message. Telegram lets a bot react only with
 * its fixed list (no ✅): 👀 received whole, 👌 handled or archived, 👍 answered, 😢 returned
 * (with a reply line saying why). Stored, offered and withdrawn show none: sent is not delivered.
 */
export const REACTION_OF: Record<RecipientState, Emoji | null> = {
  stored: null,
  offered: null,
  received: '👀',
  handled: '👌',
  archived: '👌',
  answered: '👍',
  returned: '😢',
  withdrawn: null,
};

/** The short line a returned message gets, as a reply to it. */
export function returnedLine(change: ReactionChange): string {
  const why = change.status.reason ? `: ${change.status.reason}` : '';
  return fitText(
    `${change.status.agent || 'The agent'} did not handle this${why}. It waits for you: resume or withdraw it in Sluice.`,
  );
}

export interface ReactionPump {
  poke(): void;
  stop(): Promise<void>;
  /**
   * A message of this channel was just tracked: its status may have moved before its row existed
   * (an agent can archive it first), so the next pass reads the channel whatever the events say.
   */
  recheckChannel(channelId: string): void;
}

/**
 * Shows where each of a person's own Telegram messages stands as a reaction on it. Each wake reads
 * the event log after its cursor, re-reads the status of the tracked messages in the channels that
 * moved, and reacts where the state changed. A reaction (or line) Telegram refuses is logged and
 * counted as shown: it never holds anything back. Telegram out of reach stops the pass; the next
 * pass (after `onError`'s backoff) checks every open message again, so nothing is missed.
 */
export function startReactionPump(options: {
  host: HostContext;
  api: Api;
  counts: FaultCounts;
  log(line: string): void;
  onError(err: unknown): void;
  onCaughtUp(): void;
}): ReactionPump {
  const { host, api, counts, log } = options;
  let cursor: number | undefined;
  // After a failed pass (or at start) every open message is checked, not only the moved channels.
  let checkAll = true;
  // Channels with a message tracked since the last pass (see recheckChannel).
  const tracked = new Set<string>();

  const show = async (change: ReactionChange) => {
    const chatId = Number(change.row.chat_id);
    const messageId = change.row.telegram_message_id;
    const before = change.row.state === null ? null : REACTION_OF[change.row.state as RecipientState];
    const after = REACTION_OF[change.status.state];
    try {
      if (before !== after)
        await api.setMessageReaction(
          chatId,
          messageId,
          after === null ? [] : [{ type: 'emoji', emoji: after }],
          undefined,
          callDeadline(),
        );
      if (change.status.state === 'returned')
        await api.sendMessage(
          chatId,
          returnedLine(change),
          { reply_parameters: { message_id: messageId, allow_sending_without_reply: true } },
          callDeadline(),
        );
    } catch (err) {
      if (!isRefusal(err)) throw err;
      counts.refusedReplies++;
      log(
        `reaction on message ${change.row.message_id} in chat ${chatId} refused by Telegram (${faultText(err)}); dropped, ${counts.refusedReplies} refused so far`,
      );
    }
    await markReactionShown(host, change.row.message_id, change.status.state);
  };

  const pass = async () => {
    let channels: string[] | null = null;
    if (checkAll || cursor === undefined) {
      cursor = await reactionCursorStart(host);
    } else {
      const moved = await channelsMovedAfter(host, cursor);
      cursor = moved.lastSeq;
      channels = [...new Set([...moved.channelIds, ...tracked])];
    }
    tracked.clear();
    checkAll = true;
    for (const change of await reactionChanges(host, channels)) {
      if (pump.stopped) return;
      await show(change);
    }
    checkAll = false;
  };

  const pump = startPump(pass, options);

  return {
    poke: pump.poke,
    stop: pump.stop,
    recheckChannel(channelId) {
      tracked.add(channelId);
    },
  };
}
