import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bounded } from '../../src/core/bounded.js';
import { isSluiceError } from '../../src/core/errors.js';
import { createChannel } from '../../src/host/channels/channels.js';
import { readQueueBody, readQueuePage } from '../../src/host/device/queue-pages.js';
import type { HostContext } from '../../src/host/identity/context.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { channelRead, inboxStatus, readChannelHistory, readMessageBody } from '../../src/host/reads/index.js';
import { hostileMessage, seedHostile } from '../mcp/hostile.js';
import { renameMessage, withBudget } from '../mcp/support.js';
import { openTestHost, type TestHost } from '../support/host.js';

/**
 * Every bounded reader builds its value from the objects it serialized (core/bounded.ts), never by
 * parsing its own text: for any content and budget, the value must be exactly what the text says.
 */
type Reads = Record<string, number>;

/** Runs one read; a refusal (`too_large` for a hostile id under a small budget) is no result. */
async function checked<T>(
  seen: Reads,
  name: string,
  read: () => Promise<Bounded<T>>,
): Promise<T | undefined> {
  let out: Bounded<T>;
  try {
    out = await read();
  } catch (err) {
    if (isSluiceError(err) && err.code === 'too_large') return undefined;
    throw err;
  }
  expect(out.value, name).toStrictEqual(JSON.parse(out.text));
  seen[name] = (seen[name] ?? 0) + 1;
  return out.value;
}

/** Follows `next` from a first read until it gives no cursor (at most `max` reads). */
async function walk<T>(
  first: string | undefined,
  max: number,
  read: (cursor?: string) => Promise<T | undefined>,
  next: (v: T) => string | null | undefined,
) {
  let cursor = first;
  for (let i = 0; i < max; i++) {
    const value = await read(cursor);
    const after = value === undefined ? undefined : next(value);
    if (!after) return value;
    cursor = after;
  }
  return undefined;
}

describe('bounded readers: the value is what the text says (property)', () => {
  let t: TestHost;
  let alice: Principal;
  let run = 0;
  const seen: Reads = {};

  beforeAll(async () => {
    t = await openTestHost();
    alice = await t.person('alice');
  });
  afterAll(async () => t.close());

  it('channel_read pages and messages, inbox_status, channel.history, message.read, queue.page and queue.read', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(hostileMessage, { minLength: 1, maxLength: 5 }),
        fc.oneof(fc.integer({ min: 200, max: 3000 }), fc.integer({ min: 3000, max: 40_000 })),
        fc.integer({ min: 300, max: 12_000 }),
        fc.integer({ min: 1, max: 6 }),
        async (messages, budget, units, size) => {
          run += 1;
          // An agent of its own per run: its queue holds only this run's messages.
          const bot = await t.agent(`bot${run}`);
          await t.manage(bot.name, 'alice');
          const channel = await createChannel(t.ctx, alice, { name: `values-${run}`, members: [bot.name] });
          const ids = await seedHostile(t.ctx, alice, channel.id, messages, `#${run}`);
          const small: HostContext = await withBudget(t.ctx, units);
          for (const ctx of [t.ctx, small]) {
            for (const args of [{}, { channel_id: channel.id }]) {
              await walk(
                undefined,
                20,
                (cursor) =>
                  checked(seen, 'page', () =>
                    channelRead(ctx, bot, { ...args, limit: size, ...(cursor ? { cursor } : {}) }),
                  ),
                (v) => ('nextCursor' in v ? v.nextCursor : null),
              );
            }
            for (const message_id of ids.slice(0, 2)) {
              await walk(
                undefined,
                4,
                (content_cursor) =>
                  checked(seen, 'message', () => channelRead(ctx, bot, { message_id, content_cursor })),
                (v) => ('contentCursor' in v ? v.contentCursor : null),
              );
            }
            await checked(seen, 'status', () => inboxStatus(ctx, bot));
          }
          await walk(
            undefined,
            20,
            (cursor) =>
              checked(seen, 'history', () =>
                readChannelHistory(t.ctx, alice, { channelId: channel.id, size, cursor }, budget),
              ),
            (v) => v.nextCursor,
          );
          const agent = bot.name;
          for (const messageId of ids.slice(0, 2)) {
            await walk(
              undefined,
              4,
              (cursor) =>
                checked(seen, 'body', () => readMessageBody(t.ctx, alice, { messageId, cursor }, budget)),
              (v) => (v.status === 'body' ? v.nextCursor : null),
            );
            await walk(
              undefined,
              4,
              (cursor) =>
                checked(seen, 'queue-body', () =>
                  readQueueBody(t.ctx, alice, { agent, messageId, cursor }, budget),
                ),
              (v) => (v.status === 'body' ? v.nextCursor : null),
            );
          }
          const last = await walk(
            undefined,
            20,
            (cursor) =>
              checked(seen, 'queue', () => readQueuePage(t.ctx, alice, { agent, size, cursor }, budget)),
            (v) => (v.status === 'page' ? v.nextCursor : null),
          );
          const back = last?.status === 'page' ? last.previousCursor : null;
          if (back) {
            await walk(
              back,
              20,
              (cursor) =>
                checked(seen, 'queue-back', () =>
                  readQueuePage(t.ctx, alice, { agent, size, cursor }, budget),
                ),
              (v) => (v.status === 'page' ? v.previousCursor : null),
            );
          }
          for (const around of ids) {
            await checked(seen, 'around', () => readQueuePage(t.ctx, alice, { agent, size, around }, budget));
          }
        },
      ),
      { numRuns: 30 },
    );
    // Each reader was checked.
    for (const name of [
      'page',
      'message',
      'history',
      'body',
      'status',
      'queue',
      'queue-back',
      'around',
      'queue-body',
    ])
      expect(seen[name] ?? 0, name).toBeGreaterThan(0);
  }, 300_000);

  it('the fallbacks too: a compact row, a minimal card, a locator, no oldest', async () => {
    const bot = await t.agent('fallbacks');
    await t.manage(bot.name, 'alice');
    const channel = await createChannel(t.ctx, alice, { name: 'fallbacks', members: [bot.name] });
    const send = async (body: string) =>
      (await sendMessage(t.ctx, alice, { to: channel.id, body, subject: 's' })).message_id;
    await send('\u0001'.repeat(600));
    await send('second');
    const huge = await send('x'.repeat(70_000));
    const newest = await send('y'.repeat(3000));

    // A row over 64 KiB is compact on any page; a newest row too large for the page, too.
    const page = await checked(seen, 'history', () =>
      readChannelHistory(t.ctx, alice, { channelId: channel.id }, 512 * 1024),
    );
    expect(page?.messages[1]).toMatchObject({ messageId: huge, truncated: true });
    const tight = await checked(seen, 'history', () =>
      readChannelHistory(t.ctx, alice, { channelId: channel.id }, 2000),
    );
    expect(tight?.messages).toMatchObject([{ messageId: newest, truncated: true }]);

    // A first card that alone does not fit comes without its optional fields.
    const full = await readQueuePage(t.ctx, alice, { agent: bot.name }, 512 * 1024);
    const budget = Buffer.byteLength(full.text, 'utf8') - 3000;
    const cards = await checked(seen, 'queue', () =>
      readQueuePage(t.ctx, alice, { agent: bot.name }, budget),
    );
    expect(cards?.status === 'page' && cards.rows[0]).toMatchObject({ senderLabels: [], preview: '' });

    // A message too large for a page is pointed at; an id too long to show leaves no oldest.
    const small = await withBudget(t.ctx, 2000);
    const located = await checked(seen, 'page', () => channelRead(small, bot, { channel_id: channel.id }));
    expect(located).toMatchObject({ messages: [], readContent: { message_id: newest } });
    const oldest = full.value.status === 'page' ? full.value.rows[0]?.messageId : undefined;
    await renameMessage(t.ctx, oldest as string, 'i'.repeat(20_000));
    expect(await checked(seen, 'status', () => inboxStatus(t.ctx, bot))).toMatchObject({ oldest: null });
  });
});
