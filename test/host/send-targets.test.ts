import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sendMessage } from '../../src/host/messages/messages.js';
import { listInbox } from '../../src/host/queue/inbox.js';
import { openTestHost, type TestHost } from '../support/host.js';

// A send by principal name remembers the DM it found (host/messages/messages.ts, knownDm): these pin down
// that what is remembered is exactly what a fresh lookup would find.
let t: TestHost;
beforeEach(async () => {
  t = await openTestHost();
});
afterEach(async () => {
  await t.close();
});

describe('sending to a principal by name', () => {
  it('reaches the one DM of that pair on every send, and another sender reaches their own DM', async () => {
    const bot = await t.agent('bot');
    const alice = await t.person('alice');
    const first = await sendMessage(t.ctx, t.owner, { to: 'bot', body: 'one' });
    const second = await sendMessage(t.ctx, t.owner, { to: 'bot', body: 'two' });
    const fromAlice = await sendMessage(t.ctx, alice, { to: 'bot', body: 'three' });
    expect(second.channel_id).toBe(first.channel_id);
    expect(fromAlice.channel_id).not.toBe(first.channel_id);
    const inbox = await listInbox(t.ctx, bot, {});
    expect(inbox.map((e) => [e.projection.message_id, e.projection.channel_id])).toEqual([
      [first.message_id, first.channel_id],
      [second.message_id, first.channel_id],
      [fromAlice.message_id, fromAlice.channel_id],
    ]);
  });

  it('refuses a name nobody has every time, then reaches the principal once it is added', async () => {
    for (let i = 0; i < 2; i++) {
      await expect(sendMessage(t.ctx, t.owner, { to: 'ghost', body: 'hi' })).rejects.toMatchObject({
        code: 'not_found',
      });
    }
    const ghost = await t.agent('ghost');
    const sent = await sendMessage(t.ctx, t.owner, { to: 'ghost', body: 'hi' });
    const again = await sendMessage(t.ctx, t.owner, { to: 'ghost', body: 'again' });
    expect(again.channel_id).toBe(sent.channel_id);
    expect(await listInbox(t.ctx, ghost, {})).toHaveLength(2);
  });
});
