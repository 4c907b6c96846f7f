import {
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  SelectQueryNode,
  TableNode,
  type UnknownRow,
} from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { HostContext } from '../../src/host/context.js';
import { deliveryFor } from '../../src/host/delivery.js';
import { sendMessage } from '../../src/host/messages.js';
import { resolvePrincipal } from '../../src/host/principals.js';
import type { Db, Store } from '../../src/store/store.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from './backend.js';

/**
 * A plugin that runs `between` once, right after the first read of the `inbox` table returns: a
 * send by another process lands exactly between a delivery's listing and its count.
 */
function afterFirstInboxRead(between: () => Promise<void>): KyselyPlugin {
  const inboxReads = new WeakSet<object>();
  let fired = false;
  return {
    transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
      const node = args.node;
      if (SelectQueryNode.is(node)) {
        const first = node.from?.froms[0];
        if (first && TableNode.is(first) && first.table.identifier.name === 'inbox')
          inboxReads.add(args.queryId);
      }
      return node;
    },
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      if (!fired && inboxReads.has(args.queryId)) {
        fired = true;
        await between();
      }
      return args.result;
    },
  };
}

/** The host `ctx` with every query it runs (snapshots too) passing through `plugin`. */
function withPlugin(ctx: HostContext, plugin: KyselyPlugin): HostContext {
  const store: Store = {
    ...ctx.store,
    db: ctx.store.db.withPlugin(plugin),
    readSnapshot: (fn) => ctx.store.readSnapshot((db: Db) => fn(db.withPlugin(plugin))),
  };
  return { ...ctx, store };
}

describe.each(backendsUnderTest())('a delivery reads one snapshot on %s', (backend) => {
  let h: ConformanceHost | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  // Reproduced on PostgreSQL: `sluice wait` woke on a send and printed an envelope that counted one
  // pending message and included none (the listing ran before the send committed, the count after).
  it('never counts a message it does not list when a send commits mid-read', async () => {
    h = await openConformanceHost(backend, 'deliverysnap');
    const bot = await h.agent('bot');
    const other = await h.sibling();
    const owner = await resolvePrincipal(other, 'owner');
    await sendMessage(other, owner, { to: 'bot', body: 'first' });
    const racing = withPlugin(
      h.ctx,
      afterFirstInboxRead(async () => {
        await sendMessage(other, owner, { to: 'bot', body: 'second' });
      }),
    );
    const delivery = await deliveryFor(racing, bot);
    const envelope = JSON.parse(delivery.text.split('\n')[1] as string) as {
      totalPending: number;
      included: number;
    };
    // The send landed after the snapshot: neither listed nor counted, so the count matches.
    expect(envelope.totalPending).toBe(1);
    expect(envelope.included).toBe(1);
    const after = await deliveryFor(h.ctx, bot);
    expect(after.text).toContain('"body":"second"');
  });
});
