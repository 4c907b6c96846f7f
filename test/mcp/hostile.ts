import fc from 'fast-check';
import { expect } from 'vitest';
import type { HostContext } from '../../src/host/identity/context.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { readProjection, sendMessage } from '../../src/host/messages/messages.js';
import { projectionText } from '../../src/host/messages/projection.js';
import { hostilePiece, hostileString } from '../core/arbitraries.js';
import { readAllFragments, renameMessage, type ToolCaller, type ToolText, walkPages } from './support.js';

/** One message to seed: hostile body, subject and actions, sometimes a 10 KB id. */
export interface HostileMessage {
  body: string;
  subject: string | undefined;
  actions: unknown[] | undefined;
  /** A 10 KB id to give the message after it is sent (the host never generates one). */
  hugeId: string | undefined;
  /** Relayed by the Telegram bridge (stored origin `telegram`). */
  bridged: boolean;
}

/** Nested arrays/objects `depth` levels deep, with hostile strings at the bottom. */
function deepActions(depth: number, leaf: string): unknown[] {
  let value: unknown = { label: leaf, value: leaf };
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { next: value };
  return [value];
}

/** A body of about 200 KB made of one hostile piece (escapes may make its JSON far larger). */
const hugeBody = fc
  .tuple(hostilePiece, fc.integer({ min: 150_000, max: 200_000 }))
  .map(([piece, units]) => piece.repeat(Math.ceil(units / piece.length)).slice(0, units));

/** 10 KB ids that stay within the budget once escaped (one locator must fit a page). */
const tenKbId = fc
  .tuple(fc.constantFrom('😀', '中', 'a', 'é', '"', '\ufffd'), fc.integer({ min: 4_000, max: 5_000 }))
  .map(([piece, n]) => piece.repeat(n).slice(0, 10_000));

export const hostileMessage: fc.Arbitrary<HostileMessage> = fc.record({
  body: fc.oneof(
    { weight: 6, arbitrary: hostileString(300).filter((s) => s.trim() !== '') },
    { weight: 1, arbitrary: hugeBody.filter((s) => s.trim() !== '') },
  ),
  subject: fc.option(hostileString(60), { nil: undefined }),
  actions: fc.option(
    fc.tuple(fc.integer({ min: 1, max: 300 }), hostileString(20)).map(([d, leaf]) => deepActions(d, leaf)),
    { nil: undefined },
  ),
  hugeId: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: tenKbId }),
  // Relayed by the Telegram bridge: read with "via":"telegram" beside "sender" (migration 020).
  bridged: fc.boolean(),
});

/**
 * Bodies and subjects with lone surrogates are refused at send (text is stored exactly or refused),
 * so seeds carry U+FFFD where a lone surrogate was; actions keep them (JSON-escaped, storable).
 */
function storable(text: string): string {
  return text.replace(/[\ud800-\udfff]/gu, '\ufffd');
}

/** Sends the messages into `channelId` as `author`, renaming some to hostile ids; returns their ids. */
export async function seedHostile(
  ctx: HostContext,
  author: Principal,
  channelId: string,
  messages: readonly HostileMessage[],
  unique: string,
): Promise<string[]> {
  const ids: string[] = [];
  for (const [i, m] of messages.entries()) {
    const sent = await sendMessage(ctx, author, {
      to: channelId,
      body: storable(m.body),
      subject: m.subject === undefined ? undefined : storable(m.subject),
      actions: m.actions,
      origin: m.bridged ? 'telegram' : undefined,
    });
    let id = sent.message_id;
    if (m.hugeId !== undefined) {
      id = `${m.hugeId}${unique}:${i}`;
      await renameMessage(ctx, sent.message_id, id);
    }
    ids.push(id);
  }
  return ids;
}

/** Ids a page shows: returned messages, then the readContent locator if any. */
export function idsOf(page: ToolText): string[] {
  return [
    ...(page.json.messages ?? []).map((m: { message_id: string }) => m.message_id),
    ...(page.json.readContent ? [page.json.readContent.message_id] : []),
  ];
}

/**
 * Runs every read tool over a seeded channel and checks I1 (every text within `budget`) and I2
 * (cursor walks visit each message once, in order; fragments rejoin to the exact projection).
 * Returns every result seen.
 */
export async function sweepChannel(
  ctx: HostContext,
  caller: ToolCaller,
  reader: Principal,
  channelId: string,
  ids: readonly string[],
  budget: number,
  /** What the channel's one author is to `reader` (core/provenance.ts). */
  sender = 'person',
): Promise<ToolText[]> {
  const seen: ToolText[] = [];
  // Provenance (issue 25 item 5): what the author is to the reader, on every message and fragment.
  const rows = await ctx.store.db
    .selectFrom('messages')
    .select(['id', 'author_id', 'origin'])
    .where('channel_id', '=', channelId)
    .execute();
  expect(new Set(rows.map((r) => r.author_id)).size).toBeLessThanOrEqual(1);
  // And the bridge it came through, exactly on the messages it relayed.
  const viaOf = new Map(rows.map((r) => [r.id, r.origin ?? undefined]));
  const note = (r: ToolText) => {
    seen.push(r);
    if (!r.isError) {
      for (const m of r.json.messages ?? []) {
        expect(m.sender).toBe(sender);
        expect(m.via).toBe(viaOf.get(m.message_id));
      }
      if (r.json.fragment !== undefined) {
        expect(r.json.sender).toBe(sender);
        expect(r.json.via).toBe(viaOf.get(r.json.message_id));
      }
    }
    expect(r.text.length).toBeLessThanOrEqual(budget);
    // The UTF-8 cap (for Codex) holds unless the result carries one of the hostile 10 KB ids,
    // which leave no room under it (Sluice never generates such ids); then units alone bound it.
    const mentionsHugeId = ids.some(
      (id) => id.length > 1000 && r.text.includes(JSON.stringify(id).slice(1, -1)),
    );
    if (!mentionsHugeId && ctx.limits.toolOutputBytes > 0) {
      expect(Buffer.byteLength(r.text), r.text.slice(0, 300)).toBeLessThanOrEqual(ctx.limits.toolOutputBytes);
    }
    return r;
  };
  // Stored ids are what SQLite kept (a lone surrogate becomes U+FFFD), so compare with the store.
  const stored = (
    await ctx.store.db
      .selectFrom('inbox')
      .select('message_id')
      .where('agent_id', '=', reader.id)
      .where('channel_id', '=', channelId)
      .where('state', 'in', ['waiting', 'returned'])
      .orderBy('position')
      .execute()
  ).map((r) => r.message_id);
  expect(stored).toHaveLength(ids.length);
  const unread = (await walkPages(caller, { channel_id: channelId, unread: true, limit: 7 })).map(note);
  expect(unread.every((p) => !p.isError)).toBe(true);
  expect(unread.flatMap(idsOf)).toEqual(stored);
  const history = (await walkPages(caller, { channel_id: channelId, limit: 100 })).map(note);
  expect(history.flatMap(idsOf)).toEqual([...stored].reverse());

  for (const id of stored) {
    const { joined, results } = await readAllFragments(caller, id);
    results.forEach(note);
    const projection = await readProjection(ctx, reader, id);
    expect(joined).toBe(projectionText(projection));
    expect(JSON.parse(joined)).toEqual(projection);
  }
  note(await caller.call('inbox_status'));
  if (stored[0]) note(await caller.call('message_status', { message_id: stored[0] }));
  note(
    await caller.call('message_status', { message_id: `${'\u0000'.repeat(10_000)}${'\ud800'.repeat(5)}` }),
  );
  note(await caller.call('channel_search', { query: 'a 中 é', channel_id: channelId }));
  note(await caller.call('channel_read', { message_id: `${'\u0000'.repeat(10_000)}${'\ud800'.repeat(5)}` }));
  note(
    await caller.call('channel_read', { message_id: stored[0] ?? 'x', content_cursor: 'A'.repeat(20_000) }),
  );
  if (stored.length > 0) note(await caller.call('message_archive', { message_ids: stored }));
  return seen;
}
