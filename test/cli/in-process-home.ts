import { afterAll, beforeAll } from 'vitest';
import type { HostContext } from '../../src/host/identity/context.js';
import { initHome, openHost } from '../../src/host/identity/home.js';
import { type Principal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { tempHome } from '../support/host.js';

/** A home that CLI commands run in this process use: the host and its owner, once opened. */
export interface InProcessCliHome {
  readonly ctx: HostContext;
  readonly owner: Principal;
}

/**
 * Registers, in the calling describe block, a fresh home opened before its tests (`SLUICE_HOME`
 * pointing at it, `SLUICE_AS` cleared, so commands run in this process find it) and closed, with
 * the environment restored and the folder removed, after them.
 */
export function useInProcessCliHome(): InProcessCliHome {
  const { home, cleanup } = tempHome();
  const previous = { SLUICE_HOME: process.env.SLUICE_HOME, SLUICE_AS: process.env.SLUICE_AS };
  const state: { ctx?: HostContext; owner?: Principal } = {};
  beforeAll(async () => {
    state.ctx = await openHost({ home, durability: 'normal' });
    await initHome(state.ctx);
    state.owner = await resolvePrincipal(state.ctx, 'owner');
    process.env.SLUICE_HOME = home;
    process.env.SLUICE_AS = '';
  });
  afterAll(async () => {
    for (const [k, v] of Object.entries(previous)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await state.ctx?.store.close();
    cleanup();
  });
  return {
    get ctx() {
      if (!state.ctx) throw new Error('the home opens in beforeAll');
      return state.ctx;
    },
    get owner() {
      if (!state.owner) throw new Error('the home opens in beforeAll');
      return state.owner;
    },
  };
}
