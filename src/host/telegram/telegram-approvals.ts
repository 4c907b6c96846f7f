import { isSluiceError } from '../../core/errors.js';
import { findApprovalById } from '../../store/ops/approvals.js';
import { findPrincipalById, findPrincipalsByIds } from '../../store/ops/principals.js';
import {
  insertTelegramApprovalCard,
  listOpenTelegramApprovalCards,
  listPendingApprovals,
  listTelegramLinks,
  setTelegramApprovalCardShown,
  type TelegramApprovalRow,
  telegramApprovalCardsOf,
} from '../../store/ops/telegram-approvals.js';
import { decideApprovalRequest, sweepExpiredApprovals } from '../approvals/decisions.js';
import { type ApprovalView, approvalView, approvalViews } from '../approvals/views.js';
import { mayDecideApprovals } from '../identity/access.js';
import { type HostContext, nowIso } from '../identity/context.js';
import { telegramSender } from './telegram.js';

/** Pending requests one pass looks at (the oldest first: a newer one waits its turn). */
const MAX_PENDING_CHECKED = 100;
/** Cards with buttons one pass re-reads. */
const MAX_OPEN_CHECKED = 200;

/** A card to send: the request and the paired chat of a person who may decide it. */
export interface CardToSend {
  approval: ApprovalView;
  chatId: string;
}

/** A card whose request was decided since: edit it to the outcome. */
export interface CardToClose {
  card: TelegramApprovalRow;
  approval: ApprovalView;
}

/**
 * What the bridge owes the chats: a card for every pending request in each paired chat whose person
 * may decide it (the host owner or a manager of the agent, {@link mayDecideApprovals}) that has
 * none yet, and an edit for every card still showing buttons whose request is decided. Requests
 * whose time ran out are marked expired first, so their cards close too; `nextExpiry` (ms since
 * epoch) is when the next pending request times out, for the bridge to look again then.
 */
export async function approvalCardWork(
  ctx: HostContext,
): Promise<{ send: CardToSend[]; close: CardToClose[]; nextExpiry: number | undefined }> {
  await sweepExpiredApprovals(ctx);
  const db = ctx.store.db;
  const pending = await listPendingApprovals(db, MAX_PENDING_CHECKED);
  const links = pending.length === 0 ? [] : await listTelegramLinks(db);
  const due: { row: (typeof pending)[number]; chatId: string }[] = [];
  if (links.length > 0) {
    const have = new Set(
      (
        await telegramApprovalCardsOf(
          db,
          pending.map((r) => r.id),
        )
      ).map((c) => `${c.approval_id} ${c.chat_id}`),
    );
    const persons = new Map(
      (await findPrincipalsByIds(db, [...new Set(links.map((l) => l.person_id))])).map((p) => [p.id, p]),
    );
    // One access check per (agent, person), however many requests the agent has open.
    const decides = new Map<string, boolean>();
    for (const row of pending) {
      for (const link of links) {
        const person = persons.get(link.person_id);
        if (!person || have.has(`${row.id} ${link.chat_id}`)) continue;
        const key = `${row.agent_id} ${person.id}`;
        let may = decides.get(key);
        if (may === undefined) {
          may = await mayDecideApprovals(db, person, { id: row.agent_id });
          decides.set(key, may);
        }
        if (!may) continue;
        have.add(`${row.id} ${link.chat_id}`);
        due.push({ row, chatId: link.chat_id });
      }
    }
  }
  const views = await approvalViews(
    db,
    due.map((d) => d.row),
  );
  const send = due.map((d, i) => ({ approval: views[i] as ApprovalView, chatId: d.chatId }));
  const close: CardToClose[] = [];
  for (const card of await listOpenTelegramApprovalCards(db, MAX_OPEN_CHECKED)) {
    const row = await findApprovalById(db, card.approval_id);
    // A request that is gone (never deleted today) closes its card as such.
    if (!row) await markApprovalCardShown(ctx, card, 'gone');
    else if (row.status !== 'pending') close.push({ card, approval: await approvalView(db, row) });
  }
  const expiries = pending.map((r) => Date.parse(r.expires_at));
  return { send, close, nextExpiry: expiries.length === 0 ? undefined : Math.min(...expiries) };
}

/** Records the card sent to a chat; `messageId` null when Telegram refused it (never retried). */
export async function recordApprovalCard(
  ctx: HostContext,
  input: { approvalId: string; chatId: string; messageId: number | null },
): Promise<void> {
  const at = nowIso(ctx);
  await ctx.store.transaction((trx) =>
    insertTelegramApprovalCard(trx, {
      approval_id: input.approvalId,
      chat_id: input.chatId,
      telegram_message_id: input.messageId,
      shown: input.messageId === null ? 'refused' : 'pending',
      created_at: at,
    }),
  );
}

/** Records what a card now shows (the outcome it was edited to). */
export async function markApprovalCardShown(
  ctx: HostContext,
  card: Pick<TelegramApprovalRow, 'approval_id' | 'chat_id'>,
  shown: string,
): Promise<void> {
  const at = nowIso(ctx);
  await ctx.store.transaction((trx) => setTelegramApprovalCardShown(trx, card, shown, at));
}

/** How a button press ended, for the one-line answer Telegram shows the presser. */
export type PressOutcome =
  | { kind: 'decided'; approval: ApprovalView }
  | { kind: 'already'; approval: ApprovalView }
  | { kind: 'refused'; reason: string };

/**
 * Decides a request from a button press by Telegram user `telegramUserId`, as the person that user
 * is paired with, through the host's own decision (same rights, same single winner). An unpaired
 * user, a person who may not decide (not the owner, not a manager — or no longer one) and an
 * unknown request are refused and nothing changes; a request already decided is reported as such.
 */
export async function decideFromTelegram(
  ctx: HostContext,
  telegramUserId: string,
  input: { approvalId: string; decision: 'allow' | 'deny' },
): Promise<PressOutcome> {
  const sender = await telegramSender(ctx, telegramUserId);
  if (!sender) return { kind: 'refused', reason: 'This Telegram account is not paired with Sluice.' };
  try {
    const approval = await decideApprovalRequest(ctx, sender.person, {
      id: input.approvalId,
      decision: input.decision,
    });
    return { kind: 'decided', approval };
  } catch (err) {
    if (!isSluiceError(err)) throw err;
    if (err.code === 'conflict') {
      // A request whose time ran out reads as expired, not as still pending.
      await sweepExpiredApprovals(ctx);
      const row = await findApprovalById(ctx.store.db, input.approvalId);
      const agent = row && (await findPrincipalById(ctx.store.db, row.agent_id));
      if (row && agent && (await mayDecideApprovals(ctx.store.db, sender.person, agent)))
        return { kind: 'already', approval: await approvalView(ctx.store.db, row) };
    }
    if (err.code === 'denied') return { kind: 'refused', reason: 'You may not decide this request.' };
    if (err.code === 'not_found') return { kind: 'refused', reason: 'No such request.' };
    return { kind: 'refused', reason: err.message };
  }
}
