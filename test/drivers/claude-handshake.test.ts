// The Claude driver is ready only once Claude Code answered its `initialize` (src/surfaces/drivers/
// claude.ts): a client that exits at once — an unknown option after `--` — is the start's failure
// with its own stderr line, never a started session that dies later. Stand-in clients.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import type { Principal } from '../../src/host/identity/principals.js';
import { startClaudeClient } from '../../src/surfaces/drivers/claude.js';
import { prepareDriver } from '../../src/surfaces/drivers/setup.js';
import { openTestHost, type TestHost } from '../support/host.js';

const ANSWERS = `
for await (const line of createInterface({ input: process.stdin })) {
  const msg = JSON.parse(line);
  if (msg.type === 'control_request')
    process.stdout.write(JSON.stringify({ type: 'control_response', response: { subtype: 'success', request_id: msg.request_id, response: {} } }) + '\\n');
}`;
const EXITS = `
if (process.argv.includes('--bogus')) { process.stderr.write("error: unknown option '--bogus'\\n"); process.exit(1); }
${ANSWERS}`;
const SILENT = `
for await (const _ of createInterface({ input: process.stdin })) {}`;

describe('the Claude driver waits for the client to answer', () => {
  let h: TestHost;
  let bot: Principal;
  let cwd: string;
  beforeEach(async () => {
    h = await openTestHost();
    bot = await h.agent('bot', 'turn');
    cwd = mkdtempSync(join(tmpdir(), 'sluice-claude-handshake-'));
  });
  afterEach(async () => {
    await h.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  const start = async (body: string, extraArgs: string[] = [], handshakeMs?: number) => {
    const bin = join(cwd, 'claude');
    writeFileSync(bin, `#!${process.execPath}\nimport { createInterface } from 'node:readline';\n${body}\n`);
    chmodSync(bin, 0o755);
    const setup = await prepareDriver(h.ctx, bot, { entry: '/nonexistent/sluice.js', cwd });
    return startClaudeClient(h.ctx, bot, setup, { bin, cwd, extraArgs, handshakeMs });
  };

  test('a client that answers initialize is started', async () => {
    const client = await start(EXITS);
    await client.stop();
  });

  test('a client that exits at once fails the start with its own stderr line', async () => {
    await expect(start(EXITS, ['--bogus'])).rejects.toThrow(
      "claude exited (code 1): error: unknown option '--bogus'",
    );
  });

  test('a client that never answers fails the start at the bound (and is stopped)', async () => {
    await expect(start(SILENT, [], 300)).rejects.toThrow(
      "claude did not answer the driver's initialize within 0.3 s",
    );
  });
});
