// The host's driver launcher: a run whose folder is gone crashes with a line that names the folder,
// not with Node's "spawn …/node ENOENT" (Node reports a missing cwd as a missing executable).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { HeldRun } from '../../src/host/agents/index.js';
import { processLauncher } from '../../src/surfaces/agents/launch.js';
import { tempHome } from '../support/host.js';

const { home: dir, cleanup } = tempHome('sluice-launch-');
afterAll(cleanup);

function runIn(cwd: string): HeldRun {
  return { agentId: 'a1', agent: 'gone', driver: 'claude', cwd, args: [], desired: 'running', restartSeq: 0 };
}

async function launchLines(cwd: string): Promise<{ lines: string[]; exit: { code: number | null } }> {
  const launch = processLauncher({
    launcher: { node: process.execPath, bin: join(dir, 'no-sluice.js') },
    home: dir,
  });
  const lines: string[] = [];
  const child = launch(runIn(cwd), { log: () => {}, outLine: () => {}, errorLine: (l) => lines.push(l) });
  const exit = await child.exited;
  return { lines, exit };
}

describe('processLauncher', () => {
  it("reports a run folder that no longer exists as the agent's missing folder", async () => {
    const cwd = join(dir, 'proj-removed');
    const { lines, exit } = await launchLines(cwd);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.startsWith(`the agent's folder ${cwd} does not exist (`)).toBe(true);
    expect(lines[0]).not.toContain('ENOENT');
    expect(exit.code).toBeNull();
  });

  it('reports a run folder that is now a file as no folder', async () => {
    const cwd = join(dir, 'proj-file');
    writeFileSync(cwd, '');
    const { lines } = await launchLines(cwd);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.startsWith(`the agent's folder ${cwd} is not a folder (`)).toBe(true);
  });

  it('starts the driver in a folder that exists', async () => {
    const cwd = join(dir, 'proj');
    mkdirSync(cwd);
    const { lines, exit } = await launchLines(cwd);
    // The stand-in bin/sluice.js is missing, so Node itself says so: the spawn got as far as Node.
    expect(lines.join('\n')).toContain('no-sluice.js');
    expect(exit.code).toBe(1);
  });

  // The host passes its store as databaseLocation gives it; the driver must not run on another one
  // because of what the host's own environment held (a relative path, another store).
  it.each([
    ['the host names its store', 'postgres://db.example/sluice', 'postgres://db.example/sluice'],
    ["the home's own file: an inherited SLUICE_DB is dropped", undefined, '(unset)'],
  ])('%s', async (_what, db, seen) => {
    const cwd = join(dir, 'proj-env');
    mkdirSync(cwd, { recursive: true });
    const bin = join(dir, 'print-db.js');
    writeFileSync(bin, "process.stdout.write((process.env.SLUICE_DB ?? '(unset)') + '\\n');\n");
    const launch = processLauncher({
      launcher: { node: process.execPath, bin },
      home: dir,
      db,
      env: { ...process.env, SLUICE_DB: 'relative/other.db' },
    });
    const out: string[] = [];
    const child = launch(runIn(cwd), { log: () => {}, outLine: (l) => out.push(l), errorLine: () => {} });
    expect((await child.exited).code).toBe(0);
    expect(out).toEqual([seen]);
  });
});
