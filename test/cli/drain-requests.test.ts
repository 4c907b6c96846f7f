import { beforeAll, describe, expect, it } from 'vitest';
import type { HostContext } from '../../src/host/identity/context.js';
import { addPrincipal, type Principal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { bodiesFor, DRAIN_SCENARIOS, drainTarget } from '../e2e/support/drain-eval.js';
import { drainAsModel, type ShellClient } from './drain-model.js';
import { useInProcessCliHome } from './in-process-home.js';

// Issue 26's benchmark scenarios without the real clients: a model that follows Sluice's outputs
// literally (drain-model.ts) drains each inbox, every command run for real in this process under
// Claude Code's or Codex's shell environment. The model requests it takes must meet the target
// the real-client benchmark (npm run eval, bench/results.md) holds them to.

describe('draining the benchmark scenarios', { timeout: 120_000 }, () => {
  const cli = useInProcessCliHome();
  let ctx: HostContext;
  let owner: Principal;
  let agents = 0;
  beforeAll(() => {
    ({ ctx, owner } = cli);
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
