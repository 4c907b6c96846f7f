import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { hostileMessage, idsOf, seedHostile, sweepChannel } from './hostile.js';
import { connectInMemory, type ToolCaller, walkPages } from './support.js';

describe('every tool result fits the budget, for any content (I1, I2)', () => {
  let t: TestHost;
  let bot: Principal;
  let alice: Principal;
  let mcp: ToolCaller;
  let run = 0;

  beforeAll(async () => {
    t = await openTestHost();
    bot = await t.agent('bot', 'turn');
    alice = await t.person('alice');
    await t.manage('bot', 'alice'); // only its managers add an agent to a group
    mcp = await connectInMemory(t.ctx, bot);
  });
  afterAll(async () => {
    await mcp.close();
    await t.close();
  });

  it('hostile channels: pages, walks, fragments, search, status and errors stay within 12,000 units', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostileMessage, { minLength: 1, maxLength: 8 }), async (messages) => {
        run += 1;
        const channel = await createChannel(t.ctx, alice, { name: `hostile-${run}`, members: ['bot'] });
        const ids = await seedHostile(t.ctx, alice, channel.id, messages, `#${run}`);
        await sweepChannel(t.ctx, mcp, bot, channel.id, ids, 12_000, 'manager');
      }),
      { numRuns: 20 },
    );
  }, 240_000);

  it('an id too hostile to show even as a locator does not stall the walk (I5)', async () => {
    const channel = await createChannel(t.ctx, alice, { name: 'unshowable', members: ['bot'] });
    const first = (await sendMessage(t.ctx, alice, { to: channel.id, body: 'first' })).message_id;
    const sent = await sendMessage(t.ctx, alice, { to: channel.id, body: 'middle' });
    const last = (await sendMessage(t.ctx, alice, { to: channel.id, body: 'last' })).message_id;
    const { renameMessage } = await import('./support.js');
    await renameMessage(t.ctx, sent.message_id, '\u0001'.repeat(10_000));
    const pages = await walkPages(mcp, { channel_id: channel.id, unread: true, limit: 1 });
    for (const page of pages) expect(page.text.length).toBeLessThanOrEqual(12_000);
    expect(pages.flatMap(idsOf)).toEqual([first, last]);
    expect(pages[1]!.json).toMatchObject({ messages: [], omitted: 1 });
  });
});
