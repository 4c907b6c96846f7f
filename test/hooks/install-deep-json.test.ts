// A settings file nested deeper than any real one (20,000 arrays) made `hooks install claude`
// overflow the stack while writing it back: an internal error. It is refused with one coded line,
// like a file that is not JSON, and no file changes.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, type TestHost } from '../support/host.js';

const nested = (depth: number, open: string, close: string) => `${open.repeat(depth)}1${close.repeat(depth)}`;

describe('hooks install with a deeply nested JSON file', () => {
  let host: TestHost;
  let scratch: string;
  beforeAll(async () => {
    host = await openTestHost();
    await host.agent('bot');
    scratch = mkdtempSync(join(tmpdir(), 'sluice-deep-json-'));
  });
  afterAll(async () => {
    await host.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  const cases: [string, string][] = [
    ['arrays', `{"x":${nested(20_000, '[', ']')}}`],
    ['objects', `{"x":${nested(20_000, '{"a":', '}')}}`],
  ];

  it.each(cases)('20,000 nested %s in settings.local.json: refused, nothing changed', async (_, text) => {
    const project = join(scratch, `p-${Math.random().toString(36).slice(2)}`);
    const userConfig = join(project, 'user-claude');
    mkdirSync(join(project, '.claude'), { recursive: true });
    mkdirSync(userConfig);
    const file = join(project, '.claude', 'settings.local.json');
    writeFileSync(file, text);
    const run = await runCliHere(['hooks', 'install', 'claude', '--as', 'bot', '--project', project], {
      home: host.home,
      env: { CLAUDE_CONFIG_DIR: userConfig },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^sluice: invalid_params: .*settings\.local\.json is nested more than 64 levels deep; Sluice does not edit it \(nothing was changed\)\n$/,
    );
    expect(readFileSync(file, 'utf8')).toBe(text);
    expect(readdirSync(join(project, '.claude'))).toEqual(['settings.local.json']);
    expect(readdirSync(userConfig)).toEqual([]);
  });
});
