import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { createChannel } from '../../src/host/channels/channels.js';
import type { HostContext } from '../../src/host/identity/context.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { putMedia } from '../../src/host/media/media.js';
import { IDEMPOTENCY_KEY_RETENTION_MS } from '../../src/host/messages/idempotent-sends.js';
import { replyToMessage, type SendInput, sendMessage } from '../../src/host/messages/messages.js';
import { upsertMembership } from '../../src/store/ops/channels.js';
import type { Store } from '../../src/store/store.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from './backend.js';

/** Rows every send writes: a changed count means something was stored. */
async function footprint(ctx: HostContext) {
  const count = async (table: 'messages' | 'inbox' | 'events' | 'idempotency_keys' | 'channels') =>
    Number(
      (
        await ctx.store.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    messages: await count('messages'),
    inbox: await count('inbox'),
    events: await count('events'),
    keys: await count('idempotency_keys'),
    channels: await count('channels'),
  };
}

async function refusal(promise: Promise<unknown>): Promise<SluiceError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SluiceError);
  return err as SluiceError;
}

/** The same host at another moment (only the clock differs). */
function at(ctx: HostContext, time: Date): HostContext {
  return { ...ctx, now: () => time };
}

describe.each(backendsUnderTest())('idempotent sends on %s', (backend) => {
  let h: ConformanceHost;
  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const hosts = conformanceHostSeries(backend, 'idem');
  afterAll(() => hosts.release());
  let bot: Principal;
  let alice: Principal;
  beforeEach(async () => {
    h = await hosts.open();
    bot = await h.agent('bot');
    alice = await h.person('alice');
    // Members joined directly: this suite is about sends, not about how people join channels.
    const team = await createChannel(h.ctx, h.owner, { name: 'team', members: [] });
    const now = new Date().toISOString();
    for (const member of [bot, alice]) await upsertMembership(h.ctx.store.db, team.id, member.id, now);
  });
  afterEach(async () => {
    await h?.close();
  });

  it('returns the first result to a retry with the same key and stores nothing new', async () => {
    const input: SendInput = { to: 'bot', body: 'deploy now', idempotencyKey: 'k-1' };
    const first = await sendMessage(h.ctx, h.owner, input);
    const before = await footprint(h.ctx);
    const retry = await sendMessage(h.ctx, h.owner, input);
    expect(retry).toEqual(first);
    expect(await footprint(h.ctx)).toEqual(before);
    expect(before.keys).toBe(1);
  });

  it('sends twice without a key (the retry hazard the key removes)', async () => {
    const a = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'deploy now' });
    const b = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'deploy now' });
    expect(a.message_id).not.toBe(b.message_id);
  });

  it.each<[string, Partial<SendInput>]>([
    ['another body', { body: 'deploy later' }],
    ['another target', { to: 'bot' }],
    ['another subject', { subject: 'urgent' }],
    ['a reply_to', { replyTo: 'PARENT' }],
    ['attachments', { attachmentIds: ['UPLOAD'] }],
  ])('refuses the same key with %s as conflict and stores nothing', async (_what, change) => {
    const parent = await sendMessage(h.ctx, h.owner, { to: '#team', body: 'parent' });
    const upload = await putMedia(h.ctx, h.owner, new TextEncoder().encode('notes'), 'notes.txt');
    const first = await sendMessage(h.ctx, h.owner, { to: '#team', body: 'deploy now', idempotencyKey: 'k' });
    const before = await footprint(h.ctx);
    const reused: SendInput = { to: '#team', body: 'deploy now', idempotencyKey: 'k', ...change };
    if (reused.replyTo === 'PARENT') reused.replyTo = parent.message_id;
    if (reused.attachmentIds) reused.attachmentIds = [upload.attachment_id];
    const err = await refusal(sendMessage(h.ctx, h.owner, reused));
    expect(err.code).toBe('conflict');
    expect(err.data).toMatchObject({ field: 'idempotency_key', message_id: first.message_id });
    expect(await footprint(h.ctx)).toEqual(before);
  });

  it('replays a retry that uploaded the same file again (a new upload id), and refuses other bytes', async () => {
    // Read-back finding: the fingerprint named upload ids, so `message send --attach F
    // --idempotency-key K` retried after a dropped connection (which uploads F again) was a conflict.
    const bytes = new TextEncoder().encode('the report');
    const upload = await putMedia(h.ctx, h.owner, bytes, 'report.txt');
    const first = await sendMessage(h.ctx, h.owner, {
      to: '#team',
      body: 'see attached',
      attachmentIds: [upload.attachment_id],
      idempotencyKey: 'with-file',
    });
    const again = await putMedia(h.ctx, h.owner, bytes, 'report.txt');
    expect(again.attachment_id).not.toBe(upload.attachment_id);
    const before = await footprint(h.ctx);
    const retry = await sendMessage(h.ctx, h.owner, {
      to: '#team',
      body: 'see attached',
      attachmentIds: [again.attachment_id],
      idempotencyKey: 'with-file',
    });
    expect(retry).toEqual(first);
    expect(await footprint(h.ctx)).toEqual(before);
    const other = await putMedia(h.ctx, h.owner, new TextEncoder().encode('another report'), 'report.txt');
    const err = await refusal(
      sendMessage(h.ctx, h.owner, {
        to: '#team',
        body: 'see attached',
        attachmentIds: [other.attachment_id],
        idempotencyKey: 'with-file',
      }),
    );
    expect(err.code).toBe('conflict');
    expect(await footprint(h.ctx)).toEqual(before);
    // Someone else's upload id is not content this sender can claim: still a conflict, nothing stored.
    const theirs = await putMedia(h.ctx, alice, bytes, 'report.txt');
    const stolen = await refusal(
      sendMessage(h.ctx, h.owner, {
        to: '#team',
        body: 'see attached',
        attachmentIds: [theirs.attachment_id],
        idempotencyKey: 'with-file',
      }),
    );
    expect(stolen.code).toBe('conflict');
    expect(await footprint(h.ctx)).toEqual(before);
  });

  it('keeps keys per principal: the same key from another sender is independent', async () => {
    const mine = await sendMessage(h.ctx, h.owner, { to: '#team', body: 'hi', idempotencyKey: 'shared' });
    const theirs = await sendMessage(h.ctx, alice, { to: '#team', body: 'hi', idempotencyKey: 'shared' });
    expect(theirs.message_id).not.toBe(mine.message_id);
    const again = await sendMessage(h.ctx, alice, { to: '#team', body: 'hi', idempotencyKey: 'shared' });
    expect(again).toEqual(theirs);
    expect((await footprint(h.ctx)).keys).toBe(2);
  });

  it('makes replies idempotent too, and a reply under a send key is a conflict', async () => {
    const parent = await sendMessage(h.ctx, alice, { to: '#team', body: 'question?' });
    const reply = await replyToMessage(h.ctx, bot, parent.message_id, {
      body: 'answer',
      idempotencyKey: 'r',
    });
    const before = await footprint(h.ctx);
    expect(
      await replyToMessage(h.ctx, bot, parent.message_id, { body: 'answer', idempotencyKey: 'r' }),
    ).toEqual(reply);
    const err = await refusal(sendMessage(h.ctx, bot, { to: '#team', body: 'answer', idempotencyKey: 'r' }));
    expect(err.code).toBe('conflict');
    expect(await footprint(h.ctx)).toEqual(before);
  });

  it('replays the first result even after the sender left the channel', async () => {
    const first = await sendMessage(h.ctx, alice, { to: '#team', body: 'bye', idempotencyKey: 'leave' });
    await h.ctx.store.db
      .updateTable('memberships')
      .set({ left_at: new Date().toISOString() })
      .where('principal_id', '=', alice.id)
      .execute();
    expect(await sendMessage(h.ctx, alice, { to: '#team', body: 'bye', idempotencyKey: 'leave' })).toEqual(
      first,
    );
  });

  it('creates a new DM only once for a keyed first message to a principal', async () => {
    await h.agent('fresh');
    const before = await footprint(h.ctx);
    const input: SendInput = { to: 'fresh', body: 'welcome', idempotencyKey: 'dm' };
    const first = await sendMessage(h.ctx, h.owner, input);
    expect(await sendMessage(h.ctx, h.owner, input)).toEqual(first);
    const after = await footprint(h.ctx);
    expect(after.channels - before.channels).toBe(1);
    expect(after.messages - before.messages).toBe(1);
  });

  it('stores exactly once when concurrent retries race with the same key', async () => {
    const peer = backend === 'postgres' ? await h.sibling() : h.ctx;
    const input: SendInput = { to: '#team', body: 'once', idempotencyKey: 'race' };
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => sendMessage(i % 2 === 0 ? h.ctx : peer, h.owner, input)),
    );
    expect(new Set(results.map((r) => r.message_id)).size).toBe(1);
    const rows = await h.ctx.store.db
      .selectFrom('messages')
      .select('id')
      .where('body', '=', 'once')
      .execute();
    expect(rows).toHaveLength(1);
  });

  it.runIf(backend === 'postgres')(
    'stores once even without the write lock: the key primary key refuses the loser, which replays the winner',
    async () => {
      // Plain transactions (no advisory lock): concurrent sends all miss the key, all insert a
      // message, and every one but the first to commit meets the primary key and rolls back.
      const unlocked: Store = {
        ...h.ctx.store,
        transaction: (fn) => h.ctx.store.db.transaction().execute(fn),
        sendTransaction: (fn) => h.ctx.store.db.transaction().execute(fn),
      };
      const peer = await h.sibling();
      const peerUnlocked: Store = {
        ...peer.store,
        transaction: (fn) => peer.store.db.transaction().execute(fn),
        sendTransaction: (fn) => peer.store.db.transaction().execute(fn),
      };
      const input: SendInput = { to: '#team', body: 'unlocked', idempotencyKey: 'no-lock' };
      const results = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          sendMessage(
            i % 2 === 0 ? { ...h.ctx, store: unlocked } : { ...peer, store: peerUnlocked },
            h.owner,
            input,
          ),
        ),
      );
      expect(new Set(results.map((r) => r.message_id)).size).toBe(1);
      const rows = await h.ctx.store.db
        .selectFrom('messages')
        .select('id')
        .where('body', '=', 'unlocked')
        .execute();
      expect(rows.map((r) => r.id)).toEqual([results[0]?.message_id]);
    },
  );

  it('commits the key with the message: a crash before commit leaves neither, and the retry stores once', async () => {
    const crashing: Store = {
      ...h.ctx.store,
      sendTransaction: (fn) =>
        h.ctx.store.sendTransaction(async (trx) => {
          await fn(trx);
          throw new Error('killed before commit');
        }),
    };
    const before = await footprint(h.ctx);
    const input: SendInput = { to: '#team', body: 'durable', idempotencyKey: 'crash' };
    await expect(sendMessage({ ...h.ctx, store: crashing }, h.owner, input)).rejects.toThrow('killed');
    expect(await footprint(h.ctx)).toEqual(before);
    const sent = await sendMessage(h.ctx, h.owner, input);
    expect(await sendMessage(h.ctx, h.owner, input)).toEqual(sent);
    expect((await footprint(h.ctx)).messages).toBe(before.messages + 1);
  });

  it('keeps a key at least 24 hours and forgets it after the retention period', async () => {
    const t0 = new Date('2030-01-01T00:00:00Z');
    const input: SendInput = { to: '#team', body: 'daily', idempotencyKey: 'day' };
    const first = await sendMessage(at(h.ctx, t0), h.owner, input);
    const dayLater = new Date(t0.getTime() + 24 * 3600_000 + 60_000);
    expect(await sendMessage(at(h.ctx, dayLater), h.owner, input)).toEqual(first);
    const expired = new Date(t0.getTime() + IDEMPOTENCY_KEY_RETENTION_MS + 60_000);
    const fresh = await sendMessage(at(h.ctx, expired), h.owner, input);
    expect(fresh.message_id).not.toBe(first.message_id);
    expect((await footprint(h.ctx)).keys).toBe(1);
  });

  it.each([
    ['empty', ''],
    ['too long', 'k'.repeat(201)],
    ['a control character', 'a\u0000b'],
    ['a line break', 'a\nb'],
    ['a lone surrogate', 'a\ud800'],
    ['not a string', 42],
  ])('refuses a key that is %s as invalid_params naming idempotency_key', async (_what, key) => {
    const before = await footprint(h.ctx);
    const err = await refusal(
      sendMessage(h.ctx, h.owner, { to: 'bot', body: 'x', idempotencyKey: key as string }),
    );
    expect(err.code).toBe('invalid_params');
    expect(err.data).toMatchObject({ field: 'idempotency_key' });
    expect(await footprint(h.ctx)).toEqual(before);
  });

  it('accepts 200 printable characters of any script as a key', async () => {
    const key = `${'😀'.repeat(100)}${'中'.repeat(99)} `;
    const first = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'x', idempotencyKey: key });
    expect(await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'x', idempotencyKey: key })).toEqual(first);
  });
});
