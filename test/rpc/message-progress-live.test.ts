import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveAgent } from '../../src/host/principals.js';
import { channelRead } from '../../src/host/reads/channel-read.js';
import { beginTurn, countDispatch, receivedInProcess } from '../../src/host/turns/index.js';
import { type Json, openServedHost, type RpcClient, type ServedHost } from './support.js';

// A message's status moves from stored to offered to received without any inbox transition: the
// sender's live channel subscription must still hear of it (the web page re-reads message.status).
let h: ServedHost;
let owner: RpcClient;
let outsider: RpcClient;

beforeAll(async () => {
  h = await openServedHost();
  await h.agent('helper');
  await h.agent('turner', 'turn');
  await h.person('eve');
  owner = await h.client('owner');
  outsider = await h.client('eve');
});
afterAll(() => h.close());

const receiptsOf = (c: RpcClient, messageId: string) =>
  c.notifications.filter((n: Json) => n.method === 'channel.receipts' && n.params.messageId === messageId);

describe('message progress reaches the sender live', () => {
  it('a driver carrying the message (offered) pushes channel.receipts, and message.status says offered', async () => {
    const sent = await owner.ok('message.send', { to: 'helper', body: 'carry me' });
    await owner.ok('subscribe', { channels: [sent.channel_id] });
    expect(await outsider.call('subscribe', { channels: [sent.channel_id] })).toMatchObject({
      error: { data: { code: 'not_member' } },
    });
    const before = receiptsOf(owner, sent.message_id).length;
    const helper = await resolveAgent(h.ctx, 'helper');
    await beginTurn(h.ctx, helper, { receipt: 'seen' });
    await countDispatch(h.ctx, helper, [sent.message_id]);
    await owner.waitFor(
      (n) =>
        n.method === 'channel.receipts' &&
        n.params.messageId === sent.message_id &&
        receiptsOf(owner, sent.message_id).length > before,
    );
    const status = await owner.ok('message.status', { message_id: sent.message_id });
    expect(status.recipients).toMatchObject([{ agent: 'helper', state: 'offered' }]);
    expect(receiptsOf(outsider, sent.message_id)).toEqual([]);
  });

  it('a read in an open turn (received whole) pushes channel.receipts, and message.status says received', async () => {
    const sent = await owner.ok('message.send', { to: 'turner', body: 'read me whole' });
    await owner.ok('subscribe', { channels: [sent.channel_id] });
    const turner = await resolveAgent(h.ctx, 'turner');
    await beginTurn(h.ctx, turner);
    const before = receiptsOf(owner, sent.message_id).length;
    await receivedInProcess(h.ctx, await channelRead(h.ctx, turner, { unread: true, limit: 20 }));
    await owner.waitFor(
      (n) =>
        n.method === 'channel.receipts' &&
        n.params.messageId === sent.message_id &&
        receiptsOf(owner, sent.message_id).length > before,
    );
    // The inbox entry has not moved (still waiting): only the status did.
    expect(receiptsOf(owner, sent.message_id).at(-1)?.params.receipts).toEqual([
      { agent: 'turner', state: 'waiting' },
    ]);
    const status = await owner.ok('message.status', { message_id: sent.message_id });
    expect(status.recipients).toMatchObject([{ agent: 'turner', state: 'received' }]);
  });
});
