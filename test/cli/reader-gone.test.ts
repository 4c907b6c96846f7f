// A field report: `sluice channel --help | head -1` printed "sluice: unavailable: the database
// connection was lost (EPIPE)" and exited 1 in about half the runs, on SQLite too: EPIPE from
// stdout was read as a lost database socket. A reader that went away now ends nothing and prints
// nothing. The reader here is gone before the CLI writes (a FIFO opened and closed again while
// the CLI's shell held the write end open), so every run meets EPIPE.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand, SLUICE_BIN } from '../support/host.js';

const dir = mkdtempSync(join(tmpdir(), 'sluice-reader-gone-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Runs the CLI with stdout a FIFO whose only reader opened it and closed it at once, so the
 * CLI's first write meets EPIPE; returns what it said on stderr, its exit code and whether the
 * shell saw the write fail.
 */
function runIntoGoneReader(args: string[], home: string) {
  const fifo = join(dir, `out-${Math.random().toString(36).slice(2)}`);
  const quoted = args.map((a) => `'${a}'`).join(' ');
  // The reader (`exec 4<`) opens and closes; the writer's open of the FIFO waits for that open,
  // and node starts only after it, long after the reader closed.
  const script = `mkfifo '${fifo}' && { (exec 4<'${fifo}') & } && '${process.execPath}' '${SLUICE_BIN}' ${quoted} > '${fifo}'; echo "exit $?" >&2`;
  return runCommand('sh', ['-c', script], { env: { ...process.env, SLUICE_HOME: home, SLUICE_AS: '' } });
}

describe('a reader that goes away', () => {
  it('ends help and commands quietly: no database line, exit 0', async () => {
    const home = join(dir, 'home');
    for (const args of [['channel', '--help'], ['help', 'message'], ['--help']]) {
      const run = await runIntoGoneReader(args, home);
      expect(run.stderr, args.join(' ')).toBe('exit 0\n');
    }
  });
});
