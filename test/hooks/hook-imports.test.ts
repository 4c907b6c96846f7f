import { afterAll, beforeAll, expect, test } from 'vitest';
import { sendMessage } from '../../src/host/messages/messages.js';
import { openTestHost, SLUICE_BIN, type TestHost } from '../support/host.js';
import { createImportProbe, type ImportProbe } from '../support/import-probe.js';

const HEAVY = [
  'kysely',
  'commander',
  '@modelcontextprotocol',
  'fastify',
  'sharp',
  'file-type',
  'pg',
  'ws',
  'pino',
  'zod',
];

let host: TestHost;
let probe: ImportProbe;
beforeAll(async () => {
  host = await openTestHost();
  await host.agent('bot');
  await sendMessage(host.ctx, host.owner, { to: 'bot', body: 'hello' });
  probe = createImportProbe('sluice-hook-imports-');
});
afterAll(async () => {
  await host.close();
  probe.dispose();
});

function loadedModules(args: readonly string[]): { urls: string[]; packages: string[]; stdout: string } {
  const run = probe.run([SLUICE_BIN, ...args], {
    input: JSON.stringify({
      session_id: `imports-${Math.random()}`,
      hook_event_name: 'UserPromptSubmit',
      prompt: 'hi',
    }),
    env: { ...process.env, SLUICE_HOME: host.home, SLUICE_AS: 'bot', SLUICE_DB: '' },
  });
  expect(run.status).toBe(0);
  return run;
}

test('the hook path loads neither Kysely, commander, the MCP SDK, an HTTP server, sharp nor file-type', () => {
  const { urls, packages, stdout } = loadedModules(['hook', 'claude', 'user-prompt-submit']);
  expect(JSON.parse(stdout).hookSpecificOutput.additionalContext).toContain('hello');
  for (const heavy of HEAVY) expect(packages).not.toContain(heavy);
  // (The resolve hook sees ESM imports; better-sqlite3's own require() of its binding is not listed.)
  expect(packages).toEqual(['better-sqlite3']);
  const ours = urls.filter((u) => u.includes('/dist/src/')).map((u) => u.replace(/^.*\/dist\/src\//, ''));
  expect(ours.filter((m) => !m.startsWith('surfaces/hooks/') && !m.startsWith('core/'))).toEqual([]);
});

test('the same probe sees the full CLI load commander and Kysely (the probe can fail)', () => {
  const { urls } = loadedModules(['message', 'ls', '--json']);
  // After `npm run build` they come inside the CLI bundle (dist/cli), else from node_modules.
  const loads = (pkg: string) =>
    urls.some((u) => u.includes(`node_modules/${pkg}/`) || u.includes('/dist/cli/'));
  expect(loads('commander')).toBe(true);
  expect(loads('kysely')).toBe(true);
});
