// A host on PostgreSQL whose database comes from SLUICE_DB alone (no --db anywhere), with the REAL
// clients against the scripted model server. The field bug: the driver wrote `SLUICE_DB: ""` into
// the client's settings, so the model's `sluice message reply` opened the home's SQLite file
// ("not_found: no Sluice home"), every turn ended ok and no reply was ever stored.
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/postgres-env-agents.e2e.test.ts
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { openHost } from '../../src/host/identity/home.js';
import { dropSchema, freshSchemaUrl } from '../conformance/backend.js';
import { envelopeIds, envelopesIn, openDriveHome, startDriver } from '../drivers/drive-harness.js';
import { runCli, SLUICE_BIN, tempHome } from '../support/host.js';
import { ensureClients } from './support/clients.js';
import {
  isMainAgentRequest,
  type ModelServer,
  type RecordedRequest,
  shellCall,
  startModelServer,
  toolResults,
} from './support/model-server.js';
import { claudeEnv, makeClaudeHome } from './support/run-claude.js';
import { codexEnv, makeCodexHome } from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1' && process.env.SLUICE_TEST_PG !== 'off';

/** Polls `check` until it returns a value (the host, the driver and the client are other processes). */
async function until<T>(check: () => Promise<T | undefined>, what: string, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** What the model's tool calls answered, for a failure message (the bug shows there). */
const answers = (req: RecordedRequest | undefined) =>
  req === undefined
    ? ''
    : toolResults(req)
        .map((t) => t.text)
        .join('\n');

describe.skipIf(!enabled)('agents on a PostgreSQL host named by SLUICE_DB alone (real clients)', () => {
  let server: ModelServer;
  let bins: { claude: string; codex: string };
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    bins = await ensureClients();
    server = await startModelServer();
  }, 600_000);
  afterAll(async () => {
    await server?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  test('agent run (Claude Code under sluice serve): the model replies with `sluice message reply` and the reply is stored', async () => {
    const fresh = freshSchemaUrl('e2e_env_claude');
    cleanups.push(() => dropSchema(fresh.schema));
    const { home, cleanup } = tempHome('sluice-pg-env-');
    cleanups.push(cleanup);
    const claudeHome = makeClaudeHome();
    cleanups.push(() => rmSync(claudeHome.root, { recursive: true, force: true }));
    // Whatever the model's `sluice` answered: a store it cannot find ends the wait at once.
    let failedReply: string | undefined;
    server.reset((req) => {
      if (!isMainAgentRequest(req)) return { text: 'side' };
      const results = answers(req);
      if (/not_found|no Sluice/.test(results)) failedReply = results;
      if (toolResults(req).length > 0) return { text: 'done' };
      const id = envelopeIds(envelopesIn(req).at(-1) ?? '')[0];
      if (!id) return { text: 'nothing to do' };
      return { toolCalls: [shellCall(req, `sluice message reply ${id} -m "pong-from-pg"`)] };
    });
    // SLUICE_DB in the environment only: every command below names the store that way.
    const env = claudeEnv(server, claudeHome, {
      env: { SLUICE_HOME: home, SLUICE_DB: fresh.url, SLUICE_CLAUDE_BIN: bins.claude, SLUICE_AS: '' },
    });
    const cli = (args: string[]) => runCli(args, { home, env: { SLUICE_DB: fresh.url } });
    expect((await cli(['init'])).code).toBe(0);

    const serve: ChildProcess = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0'], {
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<void>((resolve) => serve.once('exit', () => resolve()));
    // Stopped as a person would (SIGTERM): the host stops its driver and Claude Code before it
    // exits, so nothing still writes into the Claude home removed after it. Killing only the host's
    // group left them running (ENOTEMPTY on that removal); SIGKILL stays the fallback.
    cleanups.push(async () => {
      if (serve.exitCode !== null || serve.signalCode !== null) return;
      serve.kill('SIGTERM');
      const fallback = setTimeout(() => {
        try {
          process.kill(-(serve.pid as number), 'SIGKILL');
        } catch {
          // gone
        }
      }, 30_000);
      await exited;
      clearTimeout(fallback);
    });
    let banner = '';
    serve.stdout?.setEncoding('utf8').on('data', (d: string) => {
      banner += d;
    });
    await until(async () => (banner.includes('Stop:') ? true : undefined), 'the banner', 60_000);

    const run = await cli(['agent', 'run', 'bot', '--driver', 'claude', '--cwd', claudeHome.cwd]);
    expect(run.code, run.stderr).toBe(0);
    const sent = await cli(['message', 'send', 'bot', '-m', 'ping']);
    expect(sent.code, sent.stderr).toBe(0);
    const id = sent.stdout.trim();

    const ctx = await openHost({ home, db: fresh.url, pollMs: 20 });
    cleanups.push(() => ctx.store.close());
    const reply = await until(async () => {
      if (failedReply !== undefined) throw new Error(`the model's sluice failed: ${failedReply}`);
      return ctx.store.db
        .selectFrom('messages')
        .select(['body'])
        .where('reply_to', '=', id)
        .executeTakeFirst();
    }, "the agent's reply");
    expect(reply.body).toBe('pong-from-pg');
    expect(server.scriptErrors).toEqual([]);
  }, 300_000);

  test('drive codex: the sluice MCP server reaches the database and the reply is stored', async () => {
    const fresh = freshSchemaUrl('e2e_env_codex');
    cleanups.push(() => dropSchema(fresh.schema));
    const h = await openDriveHome('bot', { db: fresh.url });
    cleanups.push(() => h.close());
    const codexHome = makeCodexHome({ server });
    cleanups.push(() => rmSync(codexHome.root, { recursive: true, force: true }));
    server.reset((req) => {
      if (!isMainAgentRequest(req)) return { text: 'side' };
      if (toolResults(req).length > 0) return { text: 'replied' };
      const id = envelopeIds(envelopesIn(req).at(-1) ?? '')[0];
      if (!id) return { text: 'nothing to do' };
      return {
        toolCalls: [{ name: 'mcp__sluice__message_reply', input: { message_id: id, body: 'pong-codex' } }],
      };
    });
    const id = await h.send('ping');
    const env = codexEnv(codexHome, {
      SLUICE_HOME: h.home,
      SLUICE_DB: fresh.url,
      SLUICE_CODEX_BIN: bins.codex,
      SLUICE_AS: '',
    });
    const d = startDriver('codex', ['--as', 'bot', '--cwd', codexHome.cwd], env);
    cleanups.push(() => d.stop());
    // A driver whose client cannot start ends at once: say why rather than wait out the timeout.
    await Promise.race([
      d.waitForOutput(/ ok: 1 delivered/, 120_000),
      d.exited.then(() => {
        throw new Error(`the driver exited: ${d.stderr()}`);
      }),
    ]);
    const reply = await h.ctx.store.db
      .selectFrom('messages')
      .select(['body'])
      .where('reply_to', '=', id)
      .executeTakeFirst();
    expect(reply, answers(server.mainCalls().at(-1))).toEqual({ body: 'pong-codex' });
    expect(server.scriptErrors).toEqual([]);
  }, 300_000);
});
