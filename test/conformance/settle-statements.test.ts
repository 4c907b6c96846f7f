import { afterEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/core/fragment.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { loadProjections, sendMessage } from '../../src/host/messages/messages.js';
import { projectionText } from '../../src/host/messages/projection.js';
import { recordDeliveredCoverage } from '../../src/host/turns/coverage.js';
import { beginTurn, endTurn } from '../../src/host/turns/index.js';
import { findMessageById } from '../../src/store/ops/messages.js';
import { findQueue } from '../../src/store/ops/queues.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from './backend.js';
import { counted } from './statement-counter.js';

describe.each(backendsUnderTest())('settling a turn on %s', (backend) => {
  let h: ConformanceHost | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  /** Sends `n` messages to the agent and returns what a whole read of each adds to coverage. */
  async function pending(host: ConformanceHost, n: number) {
    const reads = [];
    for (let i = 0; i < n; i++) {
      const sent = await sendMessage(host.ctx, host.owner, { to: 'bot', body: `message ${i} ✓` });
      const row = await findMessageById(host.ctx.store.db, sent.message_id);
      if (!row) throw new Error('the message was not stored');
      const [projection] = await loadProjections(host.ctx.store.db, [row]);
      const text = projectionText(projection!);
      reads.push({
        messageSeq: Number(row.seq),
        sha256: sha256Hex(text),
        offset: 0,
        end: text.length,
        total: text.length,
      });
    }
    return reads;
  }

  /** Statements to record a read of `n` messages and settle the turn, and what the settle moved. */
  async function cycle(host: ConformanceHost, bot: Principal, n: number) {
    const reads = await pending(host, n);
    const c = counted(host.ctx);
    const turn = await beginTurn(c.ctx, bot);
    c.reset();
    await recordDeliveredCoverage(c.ctx, bot, reads);
    const cover = c.statements();
    c.reset();
    const settled = await endTurn(c.ctx, bot, turn.id, { ok: true });
    return { cover, settle: c.statements(), handled: settled.handled.length };
  }

  // Measured: settling a turn of 20 messages ran 4 statements per message (about 100 in all) and
  // recording their coverage 2 per message, the larger part of a consume cycle's cost.
  it('records and settles 20 messages in as many statements as 1, and the counters follow', async () => {
    h = await openConformanceHost(backend, 'settlecount');
    const bot = await h.agent('bot', 'turn');
    const one = await cycle(h, bot, 1);
    const twenty = await cycle(h, bot, 20);
    expect(one.handled).toBe(1);
    expect(twenty.handled).toBe(20);
    expect(twenty.cover).toBe(one.cover);
    expect(twenty.settle).toBe(one.settle);
    const queue = await findQueue(h.ctx.store.db, bot.id);
    expect(queue?.pending_person).toBe(0);
    expect(queue?.waiting).toBe(0);
  });

  it('a failed turn returns every covered message at once, with its kind, and counts them returned', async () => {
    h = await openConformanceHost(backend, 'settlefail');
    const bot = await h.agent('bot', 'turn');
    const reads = await pending(h, 5);
    const turn = await beginTurn(h.ctx, bot);
    await recordDeliveredCoverage(h.ctx, bot, reads);
    const settled = await endTurn(h.ctx, bot, turn.id, { ok: false, kind: 'model_error', reason: 'boom' });
    expect(settled.returned).toHaveLength(5);
    const queue = await findQueue(h.ctx.store.db, bot.id);
    expect(queue?.returned).toBe(5);
    expect(queue?.pending_person).toBe(5);
  });
});
