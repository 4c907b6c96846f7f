// The MCP server and the Codex driver report this package's version, not a number written into
// their code: the version is mocked here, so a hard-coded one fails.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../src/host/identity/principals.js';
import type { TestHost } from '../support/host.js';

const PACKAGE = '../../src/surfaces/sluice-package.js';

/**
 * The modules under test, imported after the version is mocked. Test files share a worker's
 * module registry (vitest.config.ts: isolate false), so a hoisted `vi.mock` would be too late
 * when an earlier file already loaded them: the registry is reset, the mock set, and the host
 * imported with them (one copy of each module, so the host's errors and classes match).
 */
async function importMocked() {
  vi.resetModules();
  vi.doMock(PACKAGE, async (original) => ({
    ...(await original<typeof import('../../src/surfaces/sluice-package.js')>()),
    packageVersion: () => '9.8.7-test',
  }));
  const [{ openTestHost }, { connectInMemory }, { startCodexClient }, { prepareDriver }] = await Promise.all([
    import('../support/host.js'),
    import('../mcp/support.js'),
    import('../../src/surfaces/drivers/codex.js'),
    import('../../src/surfaces/drivers/setup.js'),
  ]);
  return { openTestHost, connectInMemory, startCodexClient, prepareDriver };
}

// Logs the first request (initialize) and exits, as a Codex that cannot go on.
const FAKE_CODEX = `#!${process.execPath}
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
for await (const line of createInterface({ input: process.stdin })) {
  writeFileSync('initialize.json', line);
  process.exit(3);
}
`;

describe('the version Sluice reports to its clients', { timeout: 60_000 }, () => {
  let h: TestHost;
  let bot: Principal;
  let cwd: string;
  let m: Awaited<ReturnType<typeof importMocked>>;
  beforeAll(async () => {
    m = await importMocked();
    h = await m.openTestHost();
    bot = await h.agent('bot', 'turn');
    cwd = mkdtempSync(join(tmpdir(), 'sluice-fake-codex-'));
  });
  afterAll(async () => {
    await h.close();
    rmSync(cwd, { recursive: true, force: true });
    // The files after this one in the worker get the real version.
    vi.doUnmock(PACKAGE);
    vi.resetModules();
  });

  it("the MCP server's is the package version", async () => {
    const caller = await m.connectInMemory(h.ctx, bot);
    try {
      expect(caller.client.getServerVersion()).toEqual({ name: 'sluice', version: '9.8.7-test' });
    } finally {
      await caller.close();
    }
  });

  it("the Codex driver's clientInfo is the package version", async () => {
    const bin = join(cwd, 'codex');
    writeFileSync(bin, FAKE_CODEX);
    chmodSync(bin, 0o755);
    const setup = await m.prepareDriver(h.ctx, bot, { entry: '/nonexistent/sluice.js', cwd });
    await expect(
      m.startCodexClient(h.ctx, bot, setup, { bin, cwd, sandbox: 'workspace-write' }),
    ).rejects.toThrow(/codex app-server exited/);
    const initialize = JSON.parse(readFileSync(join(cwd, 'initialize.json'), 'utf8'));
    expect(initialize.method).toBe('initialize');
    expect(initialize.params.clientInfo).toEqual({
      name: 'sluice-drive',
      title: 'Sluice driver',
      version: '9.8.7-test',
    });
  });
});
