import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedQueueCards } from '../../bench/queue.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { findFirstReplies } from '../../src/store/ops/message-status.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { type LoggedStatement, type LoggedStore, openLoggedStore } from '../support/logged-store.js';

// `message.status` of an old message in a busy channel: the lookup of the agents' replies to it
// walked every later message of the channel (measured: 22 ms at 100,000 later messages, against
// 2.5 ms at 100). It must find the replies by what they reply to, whatever the channel holds.
const LATER = 3_000;

describe('the replies to an old message in a busy channel', () => {
  let h: TestHost;
  let helper: Principal;
  let parent: { id: string; seq: number };
  let store: LoggedStore;

  beforeAll(async () => {
    h = await openTestHost();
    helper = await h.agent('helper');
    const { channelId } = await seedQueueCards(h.ctx, helper, h.owner, LATER + 1);
    const first = await sql<{
      id: string;
      seq: number;
    }>`select id, seq from messages where channel_id = ${channelId} order by seq limit 1`.execute(
      h.ctx.store.db,
    );
    parent = first.rows[0] as { id: string; seq: number };
    await sendMessage(h.ctx, helper, { to: channelId, body: 'on it', replyTo: parent.id });
    store = openLoggedStore(h.home);
  }, 60_000);
  afterAll(async () => {
    await store.close();
    await h.close();
  });

  it('are found through an index of replies, not a walk of the channel', async () => {
    store.statements.length = 0;
    const replies = await findFirstReplies(store.db, parent.id, [helper.id, h.owner.id]);
    expect(replies.map((r) => r.author_id)).toEqual([helper.id]);
    const [only, ...more] = store.statements;
    expect(only).toBeDefined();
    expect(more).toEqual([]);
    const plan = store.planOf(only as LoggedStatement).join(' | ');
    expect(plan).toMatch(/^SEARCH messages USING INDEX messages_by_reply \(reply_to=\?/);
  });
});
