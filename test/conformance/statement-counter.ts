import type { KyselyPlugin } from 'kysely';
import type { HostContext } from '../../src/host/identity/context.js';
import type { Store } from '../../src/store/store.js';

/**
 * Counts every statement the host runs through `ctx`, in its transactions too: by results, not by
 * queries transformed (a query built around a subquery's builder transforms both).
 */
export function counted(ctx: HostContext): { ctx: HostContext; statements: () => number; reset: () => void } {
  let count = 0;
  const plugin: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      count++;
      return args.result;
    },
  };
  const store: Store = {
    ...ctx.store,
    db: ctx.store.db.withPlugin(plugin),
    transaction: (fn) => ctx.store.transaction((trx) => fn(trx.withPlugin(plugin))),
  };
  return {
    ctx: { ...ctx, store },
    statements: () => count,
    reset: () => {
      count = 0;
    },
  };
}
