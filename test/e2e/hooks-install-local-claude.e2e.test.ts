// `sluice hooks install claude --project DIR` writes only per-user files (`.claude/settings.local.json`
// and a local-scope MCP entry in the user's `.claude.json`); the REAL Claude Code, started in the
// project with no --settings or --mcp-config of ours, runs the delivery hook and offers and runs
// the sluice MCP tools from those files. Then `hooks uninstall claude` leaves the folder empty again.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { openTestHost, runCli, type TestHost } from '../support/host.js';
import { ensureClients } from './support/clients.js';
import {
  findText,
  findTool,
  isMainAgentRequest,
  type ModelServer,
  startModelServer,
  toolResults,
} from './support/model-server.js';
import { makeClaudeHome, runClaude } from './support/run-claude.js';

const enabled = process.env.SLUICE_E2E === '1';

describe.skipIf(!enabled)(
  'hooks install claude into a project: per-user files only (real Claude Code)',
  () => {
    let t: TestHost;
    let bot: Principal;
    let server: ModelServer;

    beforeAll(async () => {
      await ensureClients();
      t = await openTestHost();
      bot = await t.agent('bot');
      server = await startModelServer();
    }, 600_000);
    afterAll(async () => {
      await server?.close();
      await t?.close();
    });

    test('the hook delivers and the MCP tools run from settings.local.json and the local MCP entry; the shared files are never written', async () => {
      const claudeHome = makeClaudeHome('sluice-local-install-');
      // A repository of its own: Claude Code keys the local entry by the repository root, and a
      // stray `.git` above the temp folder (see test/support/global-setup.ts) must not move the key.
      mkdirSync(join(claudeHome.cwd, '.git'));
      try {
        const env = { CLAUDE_CONFIG_DIR: claudeHome.configDir, SLUICE_AGENT_LOCK: '' };
        const installed = await runCli(
          ['hooks', 'install', 'claude', '--as', 'bot', '--project', claudeHome.cwd],
          {
            home: t.home,
            env,
          },
        );
        expect(installed.code, installed.stderr).toBe(0);
        expect(existsSync(join(claudeHome.cwd, '.claude', 'settings.json'))).toBe(false);
        expect(existsSync(join(claudeHome.cwd, '.mcp.json'))).toBe(false);
        const local = JSON.parse(
          readFileSync(join(claudeHome.cwd, '.claude', 'settings.local.json'), 'utf8'),
        );

        const owner = await t.person('carol');
        const asked = await sendMessage(t.ctx, owner, {
          to: 'bot',
          body: 'local-install check: reply with pong',
        });
        server.setScript((req, ctx) => {
          if (!isMainAgentRequest(req)) return { text: 'ok' };
          if (ctx.mainIndex > 0) return { text: 'done' };
          const reply = findTool(req, 'mcp__sluice__message_reply');
          if (!reply) throw new Error('mcp__sluice__message_reply was not offered');
          return {
            toolCalls: [
              { name: reply.name, input: { message_id: asked.message_id, body: 'pong', archive: true } },
            ],
          };
        });
        // `claude -p` takes Bash/MCP permissions from --allowedTools, not from project settings: the
        // run passes the very rules the installer wrote. Hooks, lock and server come from the files.
        const run = await runClaude({
          server,
          prompt: 'check your inbox',
          home: claudeHome,
          permissionMode: 'default',
          allowedTools: local.permissions.allow,
          timeoutMs: 150_000,
        });
        expect(run.code, run.stderr).toBe(0);
        expect(server.scriptErrors).toEqual([]);
        const first = server.mainCalls()[0];
        if (!first) throw new Error('no model request');
        // The delivery hook put the message into the model's context.
        expect(findText(first, 'local-install check: reply with pong').length).toBeGreaterThan(0);
        const last = server.mainCalls().at(-1);
        if (!last) throw new Error('no model request');
        expect(toolResults(last).map((r) => r.isError)).toEqual([undefined]);
        const reply = await t.ctx.store.db
          .selectFrom('messages')
          .select(['body', 'author_id'])
          .where('reply_to', '=', asked.message_id)
          .executeTakeFirst();
        expect(reply).toEqual({ body: 'pong', author_id: bot.id });

        // Uninstall takes it all out again: the project folder is as empty as it started.
        const removed = await runCli(['hooks', 'uninstall', 'claude', '--project', claudeHome.cwd], {
          home: t.home,
          env,
        });
        expect(removed.code, removed.stderr).toBe(0);
        expect(readdirSync(claudeHome.cwd)).toEqual(['.git']);
        const global = JSON.parse(readFileSync(join(claudeHome.configDir, '.claude.json'), 'utf8'));
        const servers = Object.values(global.projects as Record<string, { mcpServers?: object }>).map(
          (p) => p.mcpServers ?? {},
        );
        expect(servers.filter((s) => 'sluice' in s)).toEqual([]);
      } finally {
        rmSync(claudeHome.root, { recursive: true, force: true });
      }
    }, 240_000);
  },
);
