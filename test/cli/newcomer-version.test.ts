// The MCP server and the Codex driver report this package's version, not a number written into
// their code: the version is mocked here, so a hard-coded one fails.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../src/host/principals.js';
import { startCodexClient } from '../../src/surfaces/drivers/codex.js';
import { prepareDriver } from '../../src/surfaces/drivers/setup.js';
import { connectInMemory } from '../mcp/support.js';
import { openTestHost, type TestHost } from '../support/host.js';

vi.mock('../../src/surfaces/sluice-package.js', async (original) => ({
  ...(await original<typeof import('../../src/surfaces/sluice-package.js')>()),
  packageVersion: () => '9.8.7-test',
}));

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
  beforeAll(async () => {
    h = await openTestHost();
    bot = await h.agent('bot', 'turn');
    cwd = mkdtempSync(join(tmpdir(), 'sluice-fake-codex-'));
  });
  afterAll(async () => {
    await h.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  it("the MCP server's is the package version", async () => {
    const caller = await connectInMemory(h.ctx, bot);
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
    const setup = await prepareDriver(h.ctx, bot, { entry: '/nonexistent/sluice.js', cwd });
    await expect(
      startCodexClient(h.ctx, bot, setup, { bin, cwd, sandbox: 'workspace-write' }),
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
