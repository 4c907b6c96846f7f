// The Codex app-server path with the real `codex app-server`: the envelope goes in `turn/start`
// `additionalContext` (codexAdditionalContext), reaches the model as a developer message, and the
// scripted model replies and archives from its first request with one shell call.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openHost } from '../../src/host/identity/home.js';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { deliveryFor } from '../../src/host/queue/delivery.js';
import { codexAdditionalContext } from '../../src/surfaces/hooks/codex-context.js';
import {
  AGENT,
  agentScript,
  envelopesIn,
  inboxState,
  repliesFromAgent,
  seedHome,
  send,
  type TurnLog,
} from '../hooks/delivery-scenarios.js';
import { ensureClients } from './support/clients.js';
import { findText, type ModelServer, startModelServer } from './support/model-server.js';
import { makeCodexHome, startCodexAppServer } from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1';

describe.skipIf(!enabled)('Codex app-server delivery (real codex)', () => {
  let server: ModelServer;
  beforeAll(async () => {
    await ensureClients();
    server = await startModelServer();
  }, 600_000);
  afterAll(() => server?.close());

  test('turn/start additionalContext carries the envelope; the model replies and archives in one call', async () => {
    const { home, binDir } = await seedHome();
    const bodies = ['First: ship the release notes ✓', 'Second: "rotate" the <keys> \\ today'];
    const ids = await send(home, bodies);
    const ctx = await openHost({ home, durability: 'normal' });
    let additionalContext: ReturnType<typeof codexAdditionalContext>;
    try {
      additionalContext = codexAdditionalContext(await deliveryFor(ctx, await resolvePrincipal(ctx, AGENT)));
    } finally {
      await ctx.store.close();
    }
    expect(Object.keys(additionalContext)).toEqual(['sluice']);
    expect(additionalContext.sluice?.kind).toBe('application');

    const log: TurnLog = { commands: [], polls: 0, firstReplyAt: null };
    server.reset(agentScript(log, () => {}));
    const codexHome = makeCodexHome({ server }, 'sluice-app-server-');
    const app = await startCodexAppServer({
      server,
      home: codexHome,
      env: { PATH: `${binDir}:${process.env.PATH}`, SLUICE_HOME: home, SLUICE_AS: AGENT },
    });
    try {
      await app.initialize(true);
      const thread = await app.request('thread/start', {
        cwd: codexHome.cwd,
        approvalPolicy: 'never',
        sandbox: 'danger-full-access',
      });
      const started = await app.request('turn/start', {
        threadId: thread.thread.id,
        input: [{ type: 'text', text: 'Check your Sluice inbox.', text_elements: [] }],
        additionalContext,
      });
      const done = await app.waitNotification(
        'turn/completed',
        (p) => p.turn.id === started.turn.id,
        120_000,
      );
      expect(done.turn.status).toBe('completed');
    } finally {
      await app.close();
    }

    const first = server.mainCalls()[0];
    if (first === undefined) throw new Error('no model request');
    const [envelope, ...more] = envelopesIn(first);
    expect(more).toEqual([]);
    expect(envelope?.messages.map((m) => [m.id, m.body])).toEqual(ids.map((id, i) => [id, bodies[i]]));
    const wrapped = findText(first, '"schema":"sluice.delivery.v1"');
    expect(wrapped).toHaveLength(1);
    expect(wrapped[0]?.role).toBe('developer');
    expect(wrapped[0]?.text.startsWith('<sluice>[sluice] inbox for bot: 2 of 2')).toBe(true);
    expect(log.commands).toHaveLength(1);
    expect(log.firstReplyAt).toBe(1);
    expect(server.mainCalls()).toHaveLength(2);

    const after = await inboxState(home);
    expect(after.pending).toEqual([]);
    expect(new Set(after.archived)).toEqual(new Set(ids));
    const replies = await repliesFromAgent(home);
    for (const id of ids) expect(replies).toContain(`Done: handled ${id}`);
  }, 300_000);
});

describe('codexAdditionalContext', () => {
  test('is empty when there is nothing to deliver', () => {
    expect(codexAdditionalContext({ text: '' })).toEqual({});
  });
});
