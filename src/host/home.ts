import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { openStore } from '../store/open.js';
import type { Durability, Store } from '../store/store.js';
import { createHostContext, type HostContext, type HostLimits } from './context.js';
import { ensurePrincipal } from './principals.js';

export const OWNER_NAME = 'owner';

/** `--home`, else `$SLUICE_HOME`, else `~/.sluice`. */
export function resolveHome(explicit?: string): string {
  return resolve(explicit ?? process.env.SLUICE_HOME ?? join(homedir(), '.sluice'));
}

export interface OpenHostOptions {
  home?: string | undefined;
  db?: string | undefined;
  durability?: Durability | undefined;
  limits?: Partial<HostLimits> | undefined;
  pollMs?: number | undefined;
}

/** Opens the store for a home and builds the host context on it. */
export async function openHost(options: OpenHostOptions = {}): Promise<HostContext> {
  const home = resolveHome(options.home);
  const store: Store = await openStore({
    home,
    url: options.db ?? process.env.SLUICE_DB,
    durability: options.durability ?? 'full',
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
  });
  try {
    return await createHostContext({ store, home, ...(options.limits ? { limits: options.limits } : {}) });
  } catch (err) {
    await store.close();
    throw err;
  }
}

/** Idempotent: creates the home, database, cursor secret and the `owner` person. */
export async function initHome(ctx: HostContext): Promise<{ home: string; owner: string }> {
  await ensurePrincipal(ctx, OWNER_NAME, 'person');
  return { home: ctx.home, owner: OWNER_NAME };
}
