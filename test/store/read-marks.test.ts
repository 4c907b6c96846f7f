// message.markRead moves a read mark forward in one statement (two when it stays), on both backends.
import type { KyselyPlugin } from 'kysely';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import { markRead } from '../../src/host/channels/read-marks.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { advanceReadMark } from '../../src/store/ops/read-marks.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';

/** Counts the statements run through the handle it is plugged into. */
function statementCounter(): KyselyPlugin & { count: number } {
  const counter = {
    count: 0,
    transformQuery: (args: Parameters<KyselyPlugin['transformQuery']>[0]) => {
      counter.count++;
      return args.node;
    },
    transformResult: async (args: Parameters<KyselyPlugin['transformResult']>[0]) => args.result,
  };
  return counter;
}

describe.each(backendsUnderTest())('read marks (%s)', (backend) => {
  let h: ConformanceHost;
  let alice: Principal;
  let channelId: string;
  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const hosts = conformanceHostSeries(backend, 'readmarks');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
    alice = await h.agent('alice');
    channelId = (await createChannel(h.ctx, h.owner, { name: 'room', members: ['alice'] })).id;
  });
  afterEach(() => h.close());

  it('a mark that moves costs one statement; one that stays costs two and reports where it is', async () => {
    const counter = statementCounter();
    const db = h.ctx.store.db.withPlugin(counter);
    const advance = async (seq: number) => {
      counter.count = 0;
      const mark = await advanceReadMark(db, { channelId, principalId: alice.id, seq, at: `t${seq}` });
      return { ...mark, statements: counter.count };
    };
    expect(await advance(5)).toEqual({ lastReadSeq: 5, moved: true, statements: 1 });
    expect(await advance(9)).toEqual({ lastReadSeq: 9, moved: true, statements: 1 });
    expect(await advance(9)).toEqual({ lastReadSeq: 9, moved: false, statements: 2 });
    expect(await advance(3)).toEqual({ lastReadSeq: 9, moved: false, statements: 2 });
  });

  it('markRead only moves forward, per principal', async () => {
    const sent = [];
    for (const body of ['one', 'two', 'three'])
      sent.push(await sendMessage(h.ctx, h.owner, { to: '#room', body }));
    const [one, two, three] = sent.map((s) => s.message_id) as [string, string, string];
    const seqOf = async (id: string) => (await markRead(h.ctx, alice, id)).lastReadSeq;
    const s2 = await seqOf(two);
    expect(await seqOf(one)).toBe(s2);
    const s3 = await seqOf(three);
    expect(s3).toBeGreaterThan(s2);
    expect(await seqOf(two)).toBe(s3);
    // The owner's mark is their own.
    expect((await markRead(h.ctx, h.owner, one)).lastReadSeq).toBeLessThan(s2);
  });
});
