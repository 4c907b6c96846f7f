// Where the driven client's `sluice` finds the store (docs/drivers.md, "Which store the agent's
// commands use"). A host whose database comes from SLUICE_DB alone (no --db) once gave the client
// settings `SLUICE_DB: ""`: inside the agent `sluice message reply` opened the home's SQLite file
// ("not_found: no Sluice home") and every turn ended ok with no reply. The driver runs the built CLI
// (npm run build first) against a stand-in client that records what it was started with and exits.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { dropSchema, freshSchemaUrl } from '../conformance/backend.js';
import { type CliResult, runCli, runCommand, tempHome } from '../support/host.js';

const pgOff = process.env.SLUICE_TEST_PG === 'off';

interface Recorded {
  /** The client's argv (after `--version`, which only prints). */
  args: string[];
}

/** A stand-in `claude`/`codex`: answers `--version`, records its arguments, exits 3. */
function standInClient(dir: string): { bin: string; recorded: () => Recorded } {
  const bin = join(dir, 'client');
  const argsFile = join(dir, 'args');
  writeFileSync(
    bin,
    `#!/bin/sh\nif [ "$1" = "--version" ]; then echo 999.0.0; exit 0; fi\nprintf '%s\\n' "$@" > '${argsFile}'\nexit 3\n`,
  );
  chmodSync(bin, 0o700);
  return { bin, recorded: () => ({ args: readFileSync(argsFile, 'utf8').trimEnd().split('\n') }) };
}

interface ClaudeFiles {
  settingsEnv: Record<string, string>;
  mcpEnv: Record<string, string>;
  lock: { db?: string };
}

function claudeFiles(home: string): ClaudeFiles {
  const dir = join(home, 'drivers', 'bot');
  const settings = JSON.parse(readFileSync(join(dir, 'settings.json'), 'utf8')) as {
    env: Record<string, string>;
  };
  const mcp = JSON.parse(readFileSync(join(dir, 'mcp.json'), 'utf8')) as {
    mcpServers: { sluice: { env: Record<string, string> } };
  };
  return {
    settingsEnv: settings.env,
    mcpEnv: mcp.mcpServers.sluice.env,
    lock: JSON.parse(settings.env.SLUICE_AGENT_LOCK as string) as { db?: string },
  };
}

/**
 * What the model's shell gets when it runs `sluice …`: the client's environment with the driver's
 * settings env over it (Claude Code applies `--settings` env to its tools), then the shim.
 */
function modelShell(home: string, base: NodeJS.ProcessEnv, args: string[]): Promise<CliResult> {
  const { settingsEnv } = claudeFiles(home);
  return runCommand(join(home, 'drivers', 'bot', 'bin', 'sluice'), args, {
    env: { ...base, ...settingsEnv },
  });
}

describe('the store a driven client is given, when SLUICE_DB alone names it', { timeout: 120_000 }, () => {
  let home: string;
  let cleanup: () => void;
  let project: string;
  let client: ReturnType<typeof standInClient>;
  let schema: string | undefined;
  beforeEach(() => {
    ({ home, cleanup } = tempHome('sluice-db-location-'));
    project = join(home, 'project');
    mkdirSync(project);
    const tools = join(home, 'tools');
    mkdirSync(tools);
    client = standInClient(tools);
    schema = undefined;
  });
  afterEach(async () => {
    if (schema !== undefined) await dropSchema(schema);
    cleanup();
  });

  /** `init` and a turn-settled `bot` with `env` only, then `drive CLIENT` (which ends: the client exits). */
  async function driveWith(driver: 'claude' | 'codex', env: Record<string, string>): Promise<CliResult> {
    for (const args of [['init'], ['agent', 'add', 'bot', '--settlement', 'turn']]) {
      const r = await runCli(args, { home, env });
      expect(r.code, r.stderr).toBe(0);
    }
    const binVar = driver === 'claude' ? 'SLUICE_CLAUDE_BIN' : 'SLUICE_CODEX_BIN';
    return runCli(['drive', driver, '--as', 'bot', '--cwd', project], {
      home,
      env: { ...env, [binVar]: client.bin },
    });
  }

  test.skipIf(pgOff)('PostgreSQL: the settings, the MCP server and the shim all name the URL', async () => {
    const fresh = freshSchemaUrl('db_location_claude');
    schema = fresh.schema;
    const env = { SLUICE_DB: fresh.url };
    const drove = await driveWith('claude', env);
    expect(drove.code).not.toBe(0);
    const files = claudeFiles(home);
    expect(files.settingsEnv.SLUICE_DB).toBe(fresh.url);
    expect(files.mcpEnv.SLUICE_DB).toBe(fresh.url);
    expect(files.lock.db).toBe(fresh.url);
    // The model's own `sluice` reaches the host's database, whatever its shell inherited.
    const send = await runCli(['message', 'send', 'bot', '-m', 'ping'], { home, env });
    expect(send.code, send.stderr).toBe(0);
    const ls = await modelShell(home, { ...process.env, SLUICE_DB: '' }, ['message', 'ls']);
    expect(ls.stderr).toBe('');
    expect(ls.code).toBe(0);
    expect(ls.stdout).toContain('ping');
  });

  test.skipIf(pgOff)('PostgreSQL: codex app-server gets the URL in its sluice MCP server env', async () => {
    const fresh = freshSchemaUrl('db_location_codex');
    schema = fresh.schema;
    const drove = await driveWith('codex', { SLUICE_DB: fresh.url });
    expect(drove.code).not.toBe(0);
    const envArg = client.recorded().args.find((a) => a.startsWith('mcp_servers.sluice.env='));
    expect(envArg).toContain(`"SLUICE_DB" = ${JSON.stringify(fresh.url)}`);
  });

  test('a SQLite file outside the home, named by SLUICE_DB alone, is named in every file', async () => {
    const file = join(home, 'elsewhere', 'store.db');
    mkdirSync(join(home, 'elsewhere'));
    await driveWith('claude', { SLUICE_DB: file });
    const files = claudeFiles(home);
    expect(files.settingsEnv.SLUICE_DB).toBe(file);
    expect(files.mcpEnv.SLUICE_DB).toBe(file);
    expect(files.lock.db).toBe(file);
    const ls = await modelShell(home, process.env, ['message', 'ls']);
    expect(ls.stderr).toBe('');
    expect(ls.code).toBe(0);
  });

  test("the home's own file: SLUICE_DB is written as that file, never empty", async () => {
    await driveWith('claude', { SLUICE_DB: '' });
    const files = claudeFiles(home);
    expect(files.settingsEnv.SLUICE_DB).toBe(join(home, 'sluice.db'));
    expect(files.mcpEnv.SLUICE_DB).toBe(join(home, 'sluice.db'));
    expect(files.lock.db).toBeUndefined();
    // A store the user's shell names elsewhere does not leak into the model's `sluice`.
    const ls = await modelShell(home, { ...process.env, SLUICE_DB: join(home, 'other.db') }, [
      'message',
      'ls',
    ]);
    expect(ls.stderr).toBe('');
    expect(ls.code).toBe(0);
  });
});
