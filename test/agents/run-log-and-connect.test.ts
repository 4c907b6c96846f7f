// The run log stays bounded and its tail is whole lines; the Connect commands name the `sluice` that
// works here (on PATH, else this clone's bin/sluice.js) and the home when it is not the default.
import { chmodSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { connectInfo } from '../../src/surfaces/agents/connect.js';
import { RunLog, runLogTail } from '../../src/surfaces/agents/run-log.js';
import { tempHome } from '../support/host.js';

const { home: dir, cleanup } = tempHome('sluice-runlog-');
afterAll(cleanup);
let n = 0;

describe('run log', () => {
  it('never holds more than twice its bound on disk, and its tail is the newest whole lines', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 300, unit: 'grapheme' }), { maxLength: 60 }), (lines) => {
        const path = join(dir, `agent-${n++}.log`);
        const log = new RunLog(path, 1000);
        for (const line of lines) log.write(`${line.replace(/\n/g, ' ')}\n`);
        log.close();
        const size = (p: string) => {
          try {
            return statSync(p).size;
          } catch {
            return 0;
          }
        };
        expect(size(path)).toBeLessThanOrEqual(1000 + 1300);
        const tail = runLogTail(path, 200);
        expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(200);
        if (tail !== '') {
          expect(tail.endsWith('\n')).toBe(true);
          const all = lines.map((l) => `${l.replace(/\n/g, ' ')}\n`).join('');
          expect(all.endsWith(tail)).toBe(true);
        }
      }),
      { numRuns: 50 },
    );
  });

  it('stamps its own lines and a missing log has an empty tail', () => {
    const path = join(dir, 'notes.log');
    const log = new RunLog(path);
    log.note(new Date('2026-12-01T16:00:00Z'), 'starting');
    log.close();
    expect(readFileSync(path, 'utf8')).toBe('2026-12-01T16:00:00.000Z [sluice] starting\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(runLogTail(join(dir, 'none.log'), 100)).toBe('');
  });
});

describe('Connect commands', () => {
  const bin = join(dir, 'clone', 'bin', 'sluice.js');
  mkdirSync(join(dir, 'clone', 'bin'), { recursive: true });
  writeFileSync(bin, '#!/usr/bin/env node\n');
  chmodSync(bin, 0o755);
  const launcher = { node: process.execPath, bin };

  it('name the clone and give the PATH step when no sluice is on PATH; add --home for another home', () => {
    const info = connectInfo('helper', {
      launcher,
      home: '/srv/sluice home',
      dialect: 'sqlite',
      env: { PATH: '/usr/bin' },
      defaultHome: '/root/.sluice',
    });
    expect(info.sluice).toBe(`${bin} --home '/srv/sluice home'`);
    expect(info.claude.map((c) => c.command)).toEqual([
      `${bin} --home '/srv/sluice home' agent run helper --driver claude --cwd .`,
      `${bin} --home '/srv/sluice home' hooks install claude --as helper`,
      `${bin} --home '/srv/sluice home' mcp --as helper`,
    ]);
    expect(info.codex[0]?.command).toContain('agent run helper --driver codex --cwd .');
    expect(info.pathStep).toContain(`ln -sf ${bin} ~/.local/bin/sluice`);
    expect(info.needsDatabaseUrl).toBe(false);
  });

  it('say plain sluice when the sluice on PATH is this installation, and nothing about the home by default', () => {
    const pathDir = join(dir, 'path');
    mkdirSync(pathDir, { recursive: true });
    symlinkSync(bin, join(pathDir, 'sluice'));
    const info = connectInfo('helper', {
      launcher,
      home: '/root/.sluice',
      dialect: 'postgres',
      env: { PATH: pathDir },
      defaultHome: '/root/.sluice',
    });
    expect(info.claude[0]?.command).toBe('sluice agent run helper --driver claude --cwd .');
    expect(info.pathStep).toBeNull();
    expect(info.needsDatabaseUrl).toBe(true);
  });

  it('say where each client installs by default: a project for Claude Code, the user settings for Codex', () => {
    // The field report: the Codex line said "into a project" while the install wrote ~/.codex.
    const info = connectInfo('helper', { launcher, home: '/root/.sluice', dialect: 'sqlite', env: {} });
    const hooks = (client: 'claude' | 'codex') => info[client].find((c) => c.id === 'hooks')?.label ?? '';
    expect(hooks('claude')).toContain('into a project (in its folder)');
    expect(hooks('codex')).toContain('into your Codex user settings');
    expect(hooks('codex')).not.toContain('into a project');
  });
});
