// `sluice hooks install codex --as AGENT` into a CODEX_HOME that holds only a model provider; then a
// default `codex exec` (approval policy "never", read-only sandbox: no bypass flags) in the project
// gets the message from the hook and replies through the sluice MCP tool. Codex 0.171 refuses an
// MCP call that would ask under "never", so this holds only while the installed table approves
// the sluice tools up front. Opt-in like the other real-client suites:
//   npm run build && SLUICE_E2E=1 npx vitest run test/e2e/hooks-install-codex.e2e.test.ts
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Principal } from '../../src/host/identity/principals.js';
import { readMessageStatus } from '../../src/host/messages/message-status.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { openTestHost, runCli, type TestHost } from '../support/host.js';
import { ensureClients } from './support/clients.js';
import {
  findText,
  findTool,
  isMainAgentRequest,
  type ModelServer,
  shellCall,
  startModelServer,
} from './support/model-server.js';
import { runBounded } from './support/proc.js';
import {
  CODEX_KEY_ENV,
  CODEX_MODEL,
  CODEX_PROVIDER_ID,
  codexEnv,
  makeCodexHome,
} from './support/run-codex.js';

const enabled = process.env.SLUICE_E2E === '1';

/** A user's config.toml before the install: a model provider and nothing else. */
function providerOnlyToml(server: ModelServer): string {
  return [
    `model = ${JSON.stringify(CODEX_MODEL)}`,
    `model_provider = ${JSON.stringify(CODEX_PROVIDER_ID)}`,
    '',
    `[model_providers.${CODEX_PROVIDER_ID}]`,
    'name = "Sluice scripted model"',
    `base_url = ${JSON.stringify(server.openaiBaseUrl)}`,
    'wire_api = "responses"',
    `env_key = ${JSON.stringify(CODEX_KEY_ENV)}`,
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
  ].join('\n');
}

describe.skipIf(!enabled)(
  'hooks install codex: a default codex exec replies through the MCP tool (real Codex)',
  () => {
    let t: TestHost;
    let server: ModelServer;
    let codexBin: string;

    beforeAll(async () => {
      codexBin = (await ensureClients()).codex;
      t = await openTestHost();
      await t.agent('bot');
      server = await startModelServer();
    }, 600_000);
    afterAll(async () => {
      await server?.close();
      await t?.close();
    });

    // Codex loads the config at start: `codex mcp list --json` refuses a file it cannot load
    // ("cannot extend value of type inline table"), so the listing is the check that the file the
    // install wrote is one Codex accepts, with the user's own servers kept beside sluice.
    test('a config whose servers are an inline table stays one Codex loads, its servers kept', async () => {
      const codexHome = makeCodexHome({ server }, 'sluice-install-codex-inline-');
      try {
        const user = `${providerOnlyToml(server)}`.replace(
          'model_provider =',
          'mcp_servers = { docs = { command = "docs-server", args = ["--stdio"] } }\nmodel_provider =',
        );
        writeFileSync(join(codexHome.codexHome, 'config.toml'), user);
        const env = { CODEX_HOME: codexHome.codexHome, SLUICE_AGENT_LOCK: '' };
        const installed = await runCli(['hooks', 'install', 'codex', '--as', 'bot'], { home: t.home, env });
        expect(installed.code, installed.stderr).toBe(0);
        for (const config of [user, readFileSync(join(codexHome.codexHome, 'config.toml'), 'utf8')]) {
          writeFileSync(join(codexHome.codexHome, 'config.toml'), config);
          const listed = await runBounded(codexBin, ['mcp', 'list', '--json'], {
            cwd: codexHome.cwd,
            env: codexEnv(codexHome),
            timeoutMs: 60_000,
          });
          expect(listed.code, listed.stderr).toBe(0);
          const names = (JSON.parse(listed.stdout) as { name: string }[]).map((s) => s.name).sort();
          expect(names).toEqual(config === user ? ['docs'] : ['docs', 'sluice']);
        }
      } finally {
        rmSync(codexHome.root, { recursive: true, force: true });
      }
    }, 120_000);

    test('the message the hook delivered ends answered by the reply made with sluice/message_reply', async () => {
      const codexHome = makeCodexHome({ server }, 'sluice-install-codex-');
      try {
        writeFileSync(join(codexHome.codexHome, 'config.toml'), providerOnlyToml(server));
        const env = { CODEX_HOME: codexHome.codexHome, SLUICE_AGENT_LOCK: '' };
        const installed = await runCli(['hooks', 'install', 'codex', '--as', 'bot'], { home: t.home, env });
        expect(installed.code, installed.stderr).toBe(0);
        expect(readFileSync(join(codexHome.codexHome, 'config.toml'), 'utf8')).toContain(
          '[mcp_servers.sluice]',
        );

        const carol: Principal = await t.person('carol');
        const asked = await sendMessage(t.ctx, carol, { to: 'bot', body: 'install check: reply with pong' });
        let replied = false;
        server.reset((req, ctx) => {
          if (!isMainAgentRequest(req)) return { text: 'ok' };
          if (replied) return { text: 'done' };
          const reply = findTool(req, /sluice__message_reply$/);
          if (!reply) {
            // Codex offers the server's tools once it is up (not `required`, docs/delivery.md): a
            // harmless command makes the next request, which lists them.
            if (ctx.mainIndex >= 20) throw new Error('the sluice message_reply tool was never offered');
            return { toolCalls: [shellCall(req, 'echo waiting for the sluice tools')] };
          }
          replied = true;
          return { toolCalls: [{ name: reply.name, input: { message_id: asked.message_id, body: 'pong' } }] };
        });

        // As a user runs it: no approval or sandbox flags; hook trust bypassed as the tester did.
        const run = await runBounded(
          codexBin,
          [
            'exec',
            '--json',
            '--skip-git-repo-check',
            '--ephemeral',
            '--dangerously-bypass-hook-trust',
            '-C',
            codexHome.cwd,
            '--',
            'check your inbox',
          ],
          { cwd: codexHome.cwd, env: codexEnv(codexHome), timeoutMs: 150_000 },
        );
        expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
        expect(server.scriptErrors).toEqual([]);
        const first = server.mainCalls()[0];
        if (!first) throw new Error('no model request');
        // The hook delivered the message into the model's context.
        expect(findText(first, 'install check: reply with pong').length).toBeGreaterThan(0);
        const calls = run.stdout
          .split('\n')
          .filter((line) => line.includes('"mcp_tool_call"'))
          .map((line) => JSON.parse(line).item)
          .filter((item) => item?.status !== 'in_progress');
        expect(calls.map((c) => [c.server, c.tool, c.status, c.error?.message ?? null])).toEqual([
          ['sluice', 'message_reply', 'completed', null],
        ]);
        const status = await readMessageStatus(t.ctx, carol, asked.message_id);
        expect(status.recipients.map((r) => [r.agent, r.state])).toEqual([['bot', 'answered']]);
      } finally {
        rmSync(codexHome.root, { recursive: true, force: true });
      }
    }, 240_000);
  },
);
