import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostContext } from '../../src/host/context.js';
import { initHome, openHost } from '../../src/host/home.js';
import { sendMessage } from '../../src/host/messages.js';
import { addPrincipal, type Principal, resolvePrincipal } from '../../src/host/principals.js';
import { bodiesFor, DRAIN_SCENARIOS, drainTarget } from '../e2e/support/drain-eval.js';
import { tempHome } from '../support/host.js';
import { drainAsModel, type ShellClient } from './drain-model.js';

// Issue 26's benchmark scenarios without the real clients: a model that follows Sluice's outputs
// literally (drain-model.ts) drains each inbox, every command run for real in this process under
// Claude Code's or Codex's shell environment. The model requests it takes must meet the target
// the real-client benchmark (npm run eval, bench/results.md) holds them to.

describe('draining the benchmark scenarios', { timeout: 120_000 }, () => {
  const { home, cleanup } = tempHome();
  let ctx: HostContext;
  let owner: Principal;
  let agents = 0;
  const previous = { SLUICE_HOME: process.env.SLUICE_HOME, SLUICE_AS: process.env.SLUICE_AS };

  beforeAll(async () => {
    ctx = await openHost({ home, durability: 'normal' });
    await initHome(ctx);
    owner = await resolvePrincipal(ctx, 'owner');
    process.env.SLUICE_HOME = home;
    process.env.SLUICE_AS = '';
  });
  afterAll(async () => {
    for (const [k, v] of Object.entries(previous)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await ctx?.store.close();
    cleanup();
  });

  for (const client of ['claude', 'codex'] as ShellClient[]) {
    for (const scenario of DRAIN_SCENARIOS) {
      const target = drainTarget(client, scenario);
      if (target === null) continue;
      it(`${client}, ${scenario}: within ${target} model requests, every body whole and once`, async () => {
        const agent = `bot${agents++}`;
        await addPrincipal(ctx, { name: agent, kind: 'agent' });
        const bot = await resolvePrincipal(ctx, agent);
        const sent = new Map<string, string>();
        for (const body of bodiesFor(scenario)) {
          const m = await sendMessage(ctx, owner, { to: agent, body });
          sent.set(m.message_id, body);
        }
        const run = await drainAsModel(ctx, bot, client, sent);
        expect(run.handled).toEqual([...sent].map(([id, body]) => ({ id, body })));
        expect(run.requests).toBeLessThanOrEqual(target);
      });
    }
  }
});
