import type { Api, Context } from 'grammy';
import type { InlineKeyboardMarkup } from 'grammy/types';
import { revealInvisible, sliceWhole } from '../../../core/text.js';
import type { ApprovalView } from '../../../host/approvals/index.js';
import type { HostContext } from '../../../host/identity/index.js';
import {
  approvalCardWork,
  type CardToClose,
  type CardToSend,
  decideFromTelegram,
  markApprovalCardShown,
  recordApprovalCard,
} from '../../../host/telegram/index.js';
import { type FaultCounts, faultText, isRefusal } from './faults.js';
import { startPump } from './pump.js';
import { callDeadline, TELEGRAM_TEXT_LIMIT } from './replies.js';

/**
 * What a card says when the request did not fit: the page shows it whole. Such a card offers only
 * Deny: nobody allows from a phone what the phone could not show.
 */
export const TRUNCATED_MARKER = '\n…(truncated: too long to allow from here; see the page)';
/** Room kept at the end of a card for the outcome line an edit adds. */
const OUTCOME_ROOM = 200;

/** The callback data of a button: `ap:<a|d>:<approval id>` (ids are ~30 bytes; Telegram allows 64). */
export function callbackData(approvalId: string, decision: 'allow' | 'deny'): string {
  return `ap:${decision === 'allow' ? 'a' : 'd'}:${approvalId}`;
}

/** The decision a button's data carries, or undefined for data that is not an approval button. */
export function parseCallbackData(
  data: string,
): { approvalId: string; decision: 'allow' | 'deny' } | undefined {
  const match = /^ap:([ad]):([a-z0-9_]{1,58})$/.exec(data);
  if (!match) return undefined;
  return { approvalId: match[2] as string, decision: match[1] === 'a' ? 'allow' : 'deny' };
}

/**
 * Allow and Deny; only Deny for a question (`user_input`: its answer is text, given on the page or
 * CLI) and for a request the card could not show whole ({@link approvalCardShowsAll}).
 */
export function keyboard(approval: ApprovalView): InlineKeyboardMarkup {
  const deny = { text: '❌ Deny', callback_data: callbackData(approval.id, 'deny') };
  if (approval.kind === 'user_input' || !approvalCardShowsAll(approval)) return { inline_keyboard: [[deny]] };
  return {
    inline_keyboard: [[{ text: '✅ Allow', callback_data: callbackData(approval.id, 'allow') }, deny]],
  };
}

function pretty(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value, null, 2) ?? String(value));
}

/**
 * The card's text: who asks, and exactly what (tool and input, command and folder, the diff, the
 * questions, the model's reason), plain text so nothing is read as markup. Cut to fit Telegram's
 * limit, leaving room for the outcome line, with {@link TRUNCATED_MARKER} when cut.
 */
export function approvalCardText(approval: ApprovalView): string {
  return approvalCard(approval).text;
}

/** Whether the card shows the whole request (nothing cut, here or by the host's list view). */
export function approvalCardShowsAll(approval: ApprovalView): boolean {
  return approvalCard(approval).whole;
}

function approvalCard(approval: ApprovalView): { text: string; whole: boolean } {
  const s = approval.subject;
  const lines = [`🔐 ${approval.agent} asks for permission (${approval.client}, ${approval.kind})`];
  if (s.tool !== undefined) lines.push(`Tool: ${s.tool}`);
  if (s.input !== undefined) lines.push(`Input:\n${pretty(s.input)}`);
  if (s.command !== undefined) lines.push(`Command: ${s.command}`);
  if (s.cwd !== undefined) lines.push(`In: ${s.cwd}`);
  if (s.diff !== undefined) lines.push(`Diff:\n${s.diff}`);
  if (s.questions !== undefined)
    lines.push(
      `Questions:\n${pretty(s.questions)}`,
      `Answer on the Sluice page or with: sluice approval answer ${approval.id} "…"`,
    );
  if (s.reason !== undefined) lines.push(`Reason: ${s.reason}`);
  lines.push(
    `Request ${approval.id}; denied unless decided by ${new Date(approval.expiresAt).toISOString()}.`,
  );
  // Controls and bidi overrides shown as escapes: the phone shows what the command holds.
  const text = revealInvisible(lines.join('\n'), { keepNewlines: true });
  const limit = TELEGRAM_TEXT_LIMIT - OUTCOME_ROOM;
  if (text.length <= limit && approval.subjectCut === undefined) return { text, whole: true };
  const kept = Math.min(text.length, limit - TRUNCATED_MARKER.length);
  return { text: `${sliceWhole(text, kept)}${TRUNCATED_MARKER}`, whole: false };
}

/** The line an edit adds once the request is decided: what, and who decided. */
export function outcomeLine(approval: ApprovalView): string {
  const by = approval.decidedBy === null ? '' : ` by ${approval.decidedBy.slice(0, 64)}`;
  if (approval.status === 'allowed') return `✅ Allowed${by}.`;
  if (approval.status === 'denied') return `❌ Denied${by}.`;
  if (approval.status === 'expired') return '⌛ Nobody decided in time: denied.';
  return `Status: ${approval.status}.`;
}

export interface ApprovalCardPump {
  poke(): void;
  stop(): Promise<void>;
}

/**
 * Sends each decider's paired chat an Allow / Deny card for every pending request, and edits each
 * card to the outcome (buttons removed) once the request is decided — on Telegram, the page or the
 * CLI. Every card is recorded in the store, so a restarted bridge neither sends one twice nor
 * forgets an edit. A card or edit Telegram refuses is logged and recorded as done: it never holds
 * anything back. Telegram out of reach stops the pass; the next one (after `onError`'s backoff)
 * picks up where it stopped.
 */
export function startApprovalCardPump(options: {
  host: HostContext;
  api: Api;
  counts: FaultCounts;
  log(line: string): void;
  onError(err: unknown): void;
  onCaughtUp(): void;
}): ApprovalCardPump {
  const { host, api, counts, log } = options;
  // A timeout commits nothing by itself: look again when the next pending request runs out.
  let expiryTimer: NodeJS.Timeout | undefined;

  const refused = (what: string, err: unknown) => {
    if (!isRefusal(err)) throw err;
    counts.refusedReplies++;
    log(`${what} refused by Telegram (${faultText(err)}); dropped, ${counts.refusedReplies} refused so far`);
  };

  const send = async ({ approval, chatId }: CardToSend) => {
    let messageId: number | null = null;
    try {
      const sent = await api.sendMessage(
        chatId,
        approvalCardText(approval),
        { reply_markup: keyboard(approval) },
        callDeadline(),
      );
      messageId = sent.message_id;
    } catch (err) {
      refused(`approval card ${approval.id} to chat ${chatId}`, err);
    }
    await recordApprovalCard(host, { approvalId: approval.id, chatId, messageId });
  };

  const close = async ({ card, approval }: CardToClose) => {
    try {
      // An edit without reply_markup takes the buttons away.
      await api.editMessageText(
        card.chat_id,
        card.telegram_message_id as number,
        `${approvalCardText(approval)}\n\n${outcomeLine(approval)}`,
        undefined,
        callDeadline(),
      );
    } catch (err) {
      refused(`edit of approval card ${approval.id} in chat ${card.chat_id}`, err);
    }
    await markApprovalCardShown(host, card, approval.status);
  };

  const pass = async () => {
    const work = await approvalCardWork(host);
    clearTimeout(expiryTimer);
    if (work.nextExpiry !== undefined && !pump.stopped) {
      const wait = Math.min(Math.max(0, work.nextExpiry - host.now().getTime()) + 50, 2 ** 31 - 1);
      expiryTimer = setTimeout(pump.poke, wait);
      expiryTimer.unref();
    }
    for (const item of work.close) {
      if (pump.stopped) return;
      await close(item);
    }
    for (const item of work.send) {
      if (pump.stopped) return;
      await send(item);
    }
  };

  const pump = startPump(pass, options);

  return {
    poke: pump.poke,
    async stop() {
      const stopping = pump.stop();
      clearTimeout(expiryTimer);
      await stopping;
    },
  };
}

/**
 * Handles a press of an Allow / Deny button: decides as the person the presser is paired with
 * (through the host, so exactly its rights), and answers the press with one short line — the
 * outcome, "already decided: …", or why it was refused (nothing changed then). The card itself is
 * edited by the pump, which the commit wakes. An answer Telegram refuses is logged and dropped.
 */
export async function handleApprovalPress(
  options: { host: HostContext; counts: FaultCounts; log(line: string): void },
  c: Context,
): Promise<void> {
  const query = c.callbackQuery;
  if (!query) return;
  const press = parseCallbackData(query.data ?? '');
  let text: string;
  if (!press) text = 'This button is not one Sluice knows.';
  else {
    const outcome = await decideFromTelegram(options.host, String(query.from.id), press);
    if (outcome.kind === 'decided') text = outcomeLine(outcome.approval);
    else if (outcome.kind === 'already') text = `Already decided: ${outcomeLine(outcome.approval)}`;
    else text = outcome.reason;
  }
  try {
    await c.api.answerCallbackQuery(query.id, { text: text.slice(0, 200) }, callDeadline());
  } catch (err) {
    if (!isRefusal(err)) throw err;
    options.counts.refusedReplies++;
    options.log(
      `answer to a button press refused by Telegram (${faultText(err)}); dropped, ${options.counts.refusedReplies} refused so far`,
    );
  }
}
