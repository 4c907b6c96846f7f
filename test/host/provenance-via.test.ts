// Provenance of bridged messages (issue 25 item 5, migration 020): a person's message the Telegram
// bridge relayed is stored with its origin, and every surface a model reads shows it beside
// `sender` as "via":"telegram" (prose: `meg (manager, via telegram)`); a direct send shows none.
// On both backends: PostgreSQL's send functions (one send, and a batch of concurrent ones) store it.
import { CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addAgentManager } from '../../src/host/agents/agent-managers.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { deliveryFor, metadataNoticeFor } from '../../src/host/queue/delivery.js';
import { archiveMessages } from '../../src/host/queue/inbox.js';
import { findMessageById } from '../../src/store/ops/messages.js';
import { handleRpcText } from '../../src/surfaces/rpc/dispatch.js';
import { DEFAULT_RPC_LIMITS } from '../../src/surfaces/rpc/methods.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { connectInMemory } from '../mcp/support.js';
import { runCliHere } from '../support/cli-in-process.js';
import { snapshotStore } from '../support/store-snapshot.js';

describe.each(backendsUnderTest())('messages the bridge relayed say so (%s)', (backend) => {
  let h: ConformanceHost;
  let bot: Principal;
  let meg: Principal;
  let alice: Principal;
  /** Sent in this order: meg via Telegram, alice directly, the owner via Telegram. */
  const ids: string[] = [];

  beforeAll(async () => {
    h = await openConformanceHost(backend, 'via');
    bot = await h.agent('bot');
    meg = await h.person('meg');
    alice = await h.person('alice');
    await addAgentManager(h.ctx, h.owner, 'bot', 'meg');
    for (const [who, origin] of [
      [meg, 'telegram'],
      [alice, undefined],
      [h.owner, 'telegram'],
    ] as const) {
      const sent = await sendMessage(h.ctx, who, { to: 'bot', body: `from ${who.name}`, origin });
      ids.push(sent.message_id);
    }
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  const cli = async (args: string[]) => {
    const db = h.db ? ['--db', h.db] : [];
    const r = await runCliHere([...args, ...db, '--as', 'bot'], {
      home: h.home,
      env: { CODEX_THREAD_ID: '' },
    });
    expect(r.stderr).toBe('');
    return r.stdout;
  };

  it('stores the origin, on a single send and on sends committed together', async () => {
    expect((await findMessageById(h.ctx.store.db, ids[0] as string))?.origin).toBe('telegram');
    expect((await findMessageById(h.ctx.store.db, ids[1] as string))?.origin).toBeNull();
    // Concurrent sends: on PostgreSQL one sluice_send_many call commits them (send-batch.ts).
    const origins = ['telegram', undefined, 'telegram', undefined, undefined, 'telegram'] as const;
    const sent = await Promise.all(
      origins.map((origin, i) => sendMessage(h.ctx, alice, { to: 'bot', body: `batch ${i}`, origin })),
    );
    for (const [i, s] of sent.entries()) {
      expect((await findMessageById(h.ctx.store.db, s.message_id))?.origin, `send ${i}`).toBe(
        origins[i] ?? null,
      );
    }
    await archiveMessages(
      h.ctx,
      bot,
      sent.map((s) => s.message_id),
    );
  });

  it.runIf(backend === 'postgres')(
    'a host of the previous build still sends: the 11-argument sluice_send stores no origin',
    async () => {
      const at = new Date().toISOString();
      const dm = (await findMessageById(h.ctx.store.db, ids[1] as string))?.channel_id;
      const params = ['m_old_build', dm, alice.id, at, 'old build', 9, null, null, '[]', '[]', 'person'];
      const { rows } = await h.ctx.store.db.executeQuery<{ seq: string | null }>(
        CompiledQuery.raw('select sluice_send($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) as seq', params),
      );
      expect(rows[0]?.seq).not.toBeNull();
      expect((await findMessageById(h.ctx.store.db, 'm_old_build'))?.origin).toBeNull();
      await archiveMessages(h.ctx, bot, ['m_old_build']);
    },
  );

  it('the envelope and the metadata notice carry via after sender, only on relayed messages', async () => {
    const rendered = await deliveryFor(h.ctx, bot);
    const json = rendered.text.split('\n')[1] as string;
    const messages = JSON.parse(json).messages;
    expect(messages.map((m: { sender: string; via?: string }) => [m.sender, m.via])).toEqual([
      ['manager', 'telegram'],
      ['person', undefined],
      ['owner', 'telegram'],
    ]);
    expect(json).toContain('"from":"meg","sender":"manager","via":"telegram","createdAt"');
    expect(rendered.text.split('\n')[2]).toContain('"via": the bridge it came through');
    expect(await metadataNoticeFor(h.ctx, bot)).toContain('oldest from meg (manager, via telegram)');
  });

  it('MCP pages, a whole message, its fragments and inbox_status carry via', async () => {
    const caller = await connectInMemory(h.ctx, bot);
    try {
      const page = await caller.call('channel_read', {});
      expect(page.json.messages.map((m: { via?: string }) => m.via)).toEqual([
        'telegram',
        undefined,
        'telegram',
      ]);
      const keys = Object.keys(page.json.messages[0]);
      expect(keys.slice(2, 5)).toEqual(['author', 'sender', 'via']);
      expect((await caller.call('channel_read', { message_id: ids[0] })).json.messages[0].via).toBe(
        'telegram',
      );
      expect((await caller.call('inbox_status')).json.oldest).toMatchObject({
        sender: 'manager',
        via: 'telegram',
      });
      // A body too large for one result comes in fragments: each says sender and via.
      const big = await sendMessage(h.ctx, meg, { to: 'bot', body: 'x'.repeat(30_000), origin: 'telegram' });
      const first = await caller.call('channel_read', { message_id: big.message_id });
      expect(first.json).toMatchObject({ sender: 'manager', via: 'telegram', offset: 0 });
      const next = await caller.call('channel_read', {
        message_id: big.message_id,
        content_cursor: first.json.contentCursor,
      });
      expect(next.json).toMatchObject({ sender: 'manager', via: 'telegram' });
      await archiveMessages(h.ctx, bot, [big.message_id]);
    } finally {
      await caller.close();
    }
  });

  it('CLI rows and text lines carry via', async () => {
    const rows = JSON.parse(await cli(['message', 'ls', '--json']));
    expect(rows.map((r: { via?: string }) => r.via)).toEqual(['telegram', undefined, 'telegram']);
    const page = JSON.parse(await cli(['message', 'ls', '--json', '--include-body']));
    expect(page.messages.map((r: { via?: string }) => r.via)).toEqual(['telegram', undefined, 'telegram']);
    expect(JSON.parse(await cli(['message', 'read', ids[0] as string, '--json'])).via).toBe('telegram');
    expect(await cli(['message', 'read', ids[0] as string])).toContain('From: meg (manager, via telegram)\n');
    const text = await cli(['message', 'ls', '--include-body']);
    expect(text).toContain('  meg (manager, via telegram)  ');
    expect(text).toContain('  alice (person)  ');
    const history = JSON.parse(await cli(['channel', 'history', 'meg', '--json']));
    // meg's two messages (the large one of the MCP test too), both relayed.
    expect(history.map((m: { sender: string; via?: string }) => [m.sender, m.via])).toEqual([
      ['manager', 'telegram'],
      ['manager', 'telegram'],
    ]);
    expect(await cli(['channel', 'history', 'owner'])).toMatch(
      / owner \(owner, via telegram\) \[\S+\]: from owner\n$/,
    );
  });

  it('a client cannot claim an origin: message.send refuses the field and nothing changes', async () => {
    const before = await snapshotStore(h.ctx);
    const reply = JSON.parse(
      (await handleRpcText(
        { ctx: h.ctx, principal: alice, limits: DEFAULT_RPC_LIMITS },
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'message.send',
          params: { to: 'bot', body: 'trust me', origin: 'telegram' },
        }),
      )) ?? 'null',
    );
    expect(reply.error?.data?.code).toBe('invalid_params');
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });
});
