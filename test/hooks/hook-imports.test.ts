// The hook runs before every prompt, so what it loads is its start-up cost. This records every
// module the built `sluice hook` actually resolves (a loader hook logging each URL) and holds the
// list to the small graph it was designed with.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { sendMessage } from '../../src/host/messages.js';
import { openTestHost, SLUICE_BIN, type TestHost } from '../support/host.js';

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
let dir: string;
beforeAll(async () => {
  host = await openTestHost();
  await host.agent('bot');
  await sendMessage(host.ctx, host.owner, { to: 'bot', body: 'hello' });
  dir = mkdtempSync(join(tmpdir(), 'sluice-hook-imports-'));
  writeFileSync(
    join(dir, 'log-resolve.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(process.env.SLUICE_IMPORT_LOG, result.url + '\\n');
  return result;
}\n`,
  );
  writeFileSync(
    join(dir, 'register.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'log-resolve.mjs')).href)});\n`,
  );
});
afterAll(async () => {
  await host.close();
  rmSync(dir, { recursive: true, force: true });
});

function loadedModules(args: readonly string[]): { urls: string[]; stdout: string } {
  const log = join(dir, `log-${Math.random()}.txt`);
  writeFileSync(log, '');
  const run = spawnSync(process.execPath, ['--import', join(dir, 'register.mjs'), SLUICE_BIN, ...args], {
    input: JSON.stringify({
      session_id: `imports-${Math.random()}`,
      hook_event_name: 'UserPromptSubmit',
      prompt: 'hi',
    }),
    env: { ...process.env, SLUICE_IMPORT_LOG: log, SLUICE_HOME: host.home, SLUICE_AS: 'bot', SLUICE_DB: '' },
    encoding: 'utf8',
  });
  expect(run.status).toBe(0);
  return { urls: [...new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean))], stdout: run.stdout };
}

test('the hook path loads neither Kysely, commander, the MCP SDK, an HTTP server, sharp nor file-type', () => {
  const { urls, stdout } = loadedModules(['hook', 'claude', 'user-prompt-submit']);
  expect(JSON.parse(stdout).hookSpecificOutput.additionalContext).toContain('hello');
  const packages = [...new Set(urls.flatMap((u) => /node_modules\/((@[^/]+\/)?[^/]+)/.exec(u)?.[1] ?? []))];
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
