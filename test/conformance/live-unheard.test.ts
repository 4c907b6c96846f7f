import type { KyselyPlugin, QueryResult, UnknownRow } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { HostContext } from '../../src/host/identity/context.js';
import { type LiveHub, startLiveHub } from '../../src/host/live/live.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { lastEventSeq } from '../../src/store/ops/events.js';
import type { Store } from '../../src/store/store.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from './backend.js';

/** The hub's view of the store: every result it gets, and a hook on the log-end lookups. */
function watched(ctx: HostContext) {
  const seen = { eventRows: [] as number[], endLookups: 0 };
  let onEndLookup: (() => void) | undefined;
  const isEndLookup = (rows: UnknownRow[]) =>
    rows.length <= 1 && rows.every((r) => ['max', 'seq'].includes(Object.keys(r).join()));
  const plugin: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: async ({ result }): Promise<QueryResult<UnknownRow>> => {
      // Event rows carry their kind; the log-end lookup one column (SQLite `max`, PostgreSQL `seq`).
      for (const row of result.rows) if ('kind' in row) seen.eventRows.push(Number(row.seq));
      if (!result.rows.some((r) => 'kind' in r) && isEndLookup(result.rows)) {
        seen.endLookups++;
        onEndLookup?.();
      }
      return result;
    },
  };
  const store: Store = { ...ctx.store, db: ctx.store.db.withPlugin(plugin) };
  return {
    ctx: { ...ctx, store },
    seen,
    whileLookingUp: (fn: (() => void) | undefined) => {
      onEndLookup = fn;
    },
  };
}

describe.each(backendsUnderTest())('the live hub with nobody listening, on %s', (backend) => {
  let h: ConformanceHost | undefined;
  let hub: LiveHub | undefined;
  afterEach(async () => {
    hub?.close();
    hub = undefined;
    await h?.close();
    h = undefined;
  });

  const send = (host: ConformanceHost, body: string) =>
    sendMessage(host.ctx, host.owner, { to: 'bot', body });

  // Measured: a host with no page or client subscribed read and dispatched every event of every
  // commit, about a tenth of a consume cycle's SQL time (three reads of 1 to 21 rows each).
  it('moves to the log end without reading events, and a listener hears every event after it joins', async () => {
    h = await openConformanceHost(backend, 'liveunheard');
    const bot = await h.agent('bot', 'turn');
    const w = watched(h.ctx);
    hub = await startLiveHub(w.ctx);
    for (let i = 0; i < 5; i++) await send(h, `unheard ${i}`);
    await hub.pump();
    expect(w.seen.eventRows).toEqual([]);
    expect(w.seen.endLookups).toBeGreaterThan(0);
    expect(hub.lastSeq()).toBe(await lastEventSeq(h.ctx.store.db));

    const joinedAfter = hub.lastSeq();
    const heard: string[] = [];
    const off = hub.onQueue(bot.id, (agentId) => heard.push(agentId));
    await send(h, 'heard');
    await hub.pump();
    expect(heard).toEqual([bot.id]);
    expect(w.seen.eventRows.length).toBeGreaterThan(0);
    expect(Math.min(...w.seen.eventRows)).toBeGreaterThan(joinedAfter);

    off();
    const readBefore = w.seen.eventRows.length;
    await send(h, 'unheard again');
    await hub.pump();
    expect(w.seen.eventRows.length).toBe(readBefore);
    expect(heard).toEqual([bot.id]);
    expect(hub.lastSeq()).toBe(await lastEventSeq(h.ctx.store.db));
  });

  it('reads the events after all when a listener joins while it looks for the log end', async () => {
    h = await openConformanceHost(backend, 'livejoin');
    const bot = await h.agent('bot', 'turn');
    const w = watched(h.ctx);
    hub = await startLiveHub(w.ctx);
    const from = hub.lastSeq();
    const heard: string[] = [];
    const started = hub;
    w.whileLookingUp(() => {
      w.whileLookingUp(undefined);
      started.onQueue(bot.id, (agentId) => heard.push(agentId));
    });
    await send(h, 'during the lookup');
    await hub.pump();
    // The skip was not trusted: the events from where the hub stood were read and dispatched.
    expect(w.seen.eventRows.length).toBeGreaterThan(0);
    expect(Math.min(...w.seen.eventRows)).toBe(from + 1);
    expect(heard).toEqual([bot.id]);
  });
});
