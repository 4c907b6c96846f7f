// `channel.list {order: "activity"}` (issue 28): a person's channels, most recent activity first,
// page by page with a keyset cursor. Activity moves between pages (messages, new channels, leaves),
// and the walk still never lists a channel twice, never skips one whose activity did not change
// meanwhile, and lists in the order the store holds. A channel whose activity changed after the
// walk began moves above the cursor: the channel-list subscription announces it (the page merges
// both), so pages and announcements together are exactly the person's channels.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listChannelsByActivityPage } from '../../src/host/channels/channel-pages.js';
import { createChannel, leaveChannel } from '../../src/host/channels/channels.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';

type Step =
  | { kind: 'page'; limit: number }
  | { kind: 'send'; pick: number }
  | { kind: 'create' }
  | { kind: 'leave'; pick: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('page' as const), limit: fc.integer({ min: 1, max: 4 }) }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('send' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('create' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('leave' as const), pick: fc.nat() }) },
);

describe.each(backendsUnderTest())('channels by recent activity (%s)', (backend) => {
  const hosts = conformanceHostSeries(backend, 'byactivity');
  let h: ConformanceHost;
  let made = 0;
  beforeAll(async () => {
    h = await hosts.open();
  });
  afterAll(async () => {
    await h.close();
    await hosts.release();
  });

  /** The person's whole list, one page walk with nothing changing: the store's truth. */
  async function truth(): Promise<{ id: string; activity: number }[]> {
    const page = await listChannelsByActivityPage(h.ctx, h.owner, { limit: 200 });
    expect(page.nextCursor).toBeNull();
    return page.channels.map((c) => ({ id: c.id, activity: c.activity }));
  }

  it('a walk never repeats a channel, and misses only channels whose activity moved after it began', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 6 }),
        fc.array(step, { maxLength: 14 }),
        async (start, steps) => {
          const mine: string[] = [];
          const create = async () => {
            const c = await createChannel(h.ctx, h.owner, { name: `c${made++}`, members: [] });
            mine.push(c.id);
            return c.id;
          };
          for (let i = 0; i < start; i++) await create();
          const before = new Map((await truth()).map((c) => [c.id, c.activity] as const));
          const touched = new Set<string>();
          const listed: { id: string; activity: number }[] = [];
          let cursor: string | undefined;
          let done = false;
          const nextPage = async (limit: number) => {
            if (done) return;
            const page = await listChannelsByActivityPage(h.ctx, h.owner, { cursor, limit });
            listed.push(...page.channels.map((c) => ({ id: c.id, activity: c.activity })));
            cursor = page.nextCursor ?? undefined;
            done = page.nextCursor === null;
          };
          await nextPage(2);
          for (const s of steps) {
            const live = mine.filter((id) => !touched.has(`left:${id}`));
            if (s.kind === 'page') await nextPage(s.limit);
            else if (s.kind === 'create') touched.add(await create());
            else if (live.length > 0) {
              const id = live[s.pick % live.length] as string;
              touched.add(id);
              if (s.kind === 'send') await sendMessage(h.ctx, h.owner, { to: id, body: 'news' });
              else {
                touched.add(`left:${id}`);
                await leaveChannel(h.ctx, h.owner, id);
              }
            }
          }
          while (!done) await nextPage(3);
          const end = await truth();
          const ids = listed.map((c) => c.id);
          // Never twice.
          expect(new Set(ids).size).toBe(ids.length);
          // Descending keys along the walk (a keyset: each page continues below the last).
          for (let i = 1; i < listed.length; i++) {
            const [a, b] = [listed[i - 1], listed[i]] as [(typeof listed)[0], (typeof listed)[0]];
            expect(a.activity > b.activity || (a.activity === b.activity && a.id > b.id)).toBe(true);
          }
          // Every channel the person is in at the end was listed, or changed after the walk began.
          for (const c of end)
            expect(ids.includes(c.id) || touched.has(c.id) || !before.has(c.id)).toBe(true);
          // A channel untouched throughout was listed with the key it still has.
          for (const c of end)
            if (!touched.has(c.id)) expect(listed.find((l) => l.id === c.id)?.activity).toBe(c.activity);
          // The store's order is the activity order: the newest message's channel first.
          for (let i = 1; i < end.length; i++)
            expect((end[i - 1] as { activity: number }).activity).toBeGreaterThanOrEqual(
              (end[i] as { activity: number }).activity,
            );
          // Leave every channel of this run, so the next run starts from an empty list.
          for (const id of mine) if (!touched.has(`left:${id}`)) await leaveChannel(h.ctx, h.owner, id);
        },
      ),
      { numRuns: backend === 'sqlite' ? 40 : 12 },
    );
  }, 120_000);

  it('a message moves its channel first, and a new channel comes first', async () => {
    const a = await createChannel(h.ctx, h.owner, { name: 'order-a', members: [] });
    const b = await createChannel(h.ctx, h.owner, { name: 'order-b', members: [] });
    let first = (await listChannelsByActivityPage(h.ctx, h.owner, { limit: 2 })).channels.map((c) => c.id);
    expect(first).toEqual([b.id, a.id]);
    await sendMessage(h.ctx, h.owner, { to: a.id, body: 'hi' });
    first = (await listChannelsByActivityPage(h.ctx, h.owner, { limit: 2 })).channels.map((c) => c.id);
    expect(first).toEqual([a.id, b.id]);
    const c = await createChannel(h.ctx, h.owner, { name: 'order-c', members: [] });
    first = (await listChannelsByActivityPage(h.ctx, h.owner, { limit: 1 })).channels.map((x) => x.id);
    expect(first).toEqual([c.id]);
    for (const x of [a, b, c]) await leaveChannel(h.ctx, h.owner, x.id);
  });
});
