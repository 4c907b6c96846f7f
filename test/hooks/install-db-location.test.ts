// `sluice hooks install` when SLUICE_DB alone names the store (no --db): the lock, the hook and wake
// commands and the MCP server all name that store, so the client's `sluice` and its sluice tools
// reach the host's database rather than the home's SQLite file (docs/postgres.md).
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { dropSchema, freshSchemaUrl } from '../conformance/backend.js';
import { runCliHere } from '../support/cli-in-process.js';
import { tempHome } from '../support/host.js';

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

describe.skipIf(process.env.SLUICE_TEST_PG === 'off')(
  'hooks install with SLUICE_DB (PostgreSQL) only in the environment',
  { timeout: 60_000 },
  () => {
    const { home, cleanup } = tempHome('sluice-install-db-');
    const fresh = freshSchemaUrl('install_db_location');
    const env = { SLUICE_DB: fresh.url };
    beforeAll(async () => {
      for (const args of [['init'], ['agent', 'add', 'bot']]) {
        const r = await runCliHere(args, { home, env });
        expect(r.code, r.stderr).toBe(0);
      }
    });
    afterAll(async () => {
      await dropSchema(fresh.schema);
      cleanup();
    });

    test('claude: the lock, the hooks, the wake and the local MCP server name the URL', async () => {
      const project = join(home, 'project');
      const userConfig = join(home, 'user-claude');
      mkdirSync(project);
      mkdirSync(userConfig);
      const run = await runCliHere(['hooks', 'install', 'claude', '--as', 'bot', '--project', project], {
        home,
        env: { ...env, CLAUDE_CONFIG_DIR: userConfig },
      });
      expect(run.code, run.stderr).toBe(0);
      const settings = readJson(join(project, '.claude', 'settings.local.json'));
      expect(JSON.parse(settings.env.SLUICE_AGENT_LOCK).db).toBe(fresh.url);
      const commands = ['SessionStart', 'UserPromptSubmit', 'Stop'].flatMap((event) =>
        (settings.hooks[event] as { hooks: { command: string }[] }[]).flatMap((g) =>
          g.hooks.map((h) => h.command),
        ),
      );
      expect(commands.length).toBeGreaterThanOrEqual(3);
      for (const command of commands) expect(command).toContain(`--db '${fresh.url}'`);
      const servers = Object.values(readJson(join(userConfig, '.claude.json')).projects) as {
        mcpServers: { sluice: { env: Record<string, string> } };
      }[];
      expect(servers.map((p) => p.mcpServers.sluice.env.SLUICE_DB)).toEqual([fresh.url]);
    });

    test('codex: the [mcp_servers.sluice.env] table and the hooks name the URL', async () => {
      const codexHome = join(home, 'codex');
      mkdirSync(codexHome);
      const run = await runCliHere(['hooks', 'install', 'codex', '--as', 'bot', '--user'], {
        home,
        env: { ...env, CODEX_HOME: codexHome },
      });
      expect(run.code, run.stderr).toBe(0);
      const toml = readFileSync(join(codexHome, 'config.toml'), 'utf8');
      expect(toml).toContain(`SLUICE_DB = ${JSON.stringify(fresh.url)}`);
      const hooks = readJson(join(codexHome, 'hooks.json')).hooks;
      expect(hooks.UserPromptSubmit[0].hooks[0].command).toContain(`--db '${fresh.url}'`);
    });
  },
);
