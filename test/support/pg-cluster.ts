import { execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A PostgreSQL cluster of a test's own (initdb + pg_ctl in a temp folder, a free port, trust auth),
 * which the test may restart or kill: the machine's shared server is never touched.
 */
export interface PgCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`. */
  url: string;
  port: number;
  /** `pg_ctl restart -m immediate` (backends killed, crash recovery on start); resolves once it accepts connections. */
  restartImmediate(): Promise<void>;
  /** `pg_ctl stop -m immediate`: the server is gone (connections refused) until {@link start}. */
  stopImmediate(): Promise<void>;
  /** Starts a stopped server again (crash recovery first); resolves once it accepts connections. */
  start(): Promise<void>;
  /** The tail of the server's log (for a failed test's diagnosis). */
  logTail(lines?: number): string;
  /** Stops the server (immediate) and removes its folder. */
  destroy(): Promise<void>;
}

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Why a cluster cannot be made here (one line), or undefined when initdb and pg_ctl are on PATH. */
export function clusterUnavailableReason(): string | undefined {
  if (!onPath('initdb') || !onPath('pg_ctl'))
    return 'initdb/pg_ctl not on PATH: install the PostgreSQL server to run the restart tests';
  if (process.getuid?.() === 0 && runAsPostgres() === undefined)
    return 'running as root without a postgres user: initdb refuses to run as root';
  return undefined;
}

/** initdb refuses root: as root, the server's commands run as the `postgres` user. */
function runAsPostgres(): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
  } catch {
    return undefined;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

function run(command: string, args: string[], as: { uid: number; gid: number } | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(as ?? {}) });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString('utf8');
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${output.slice(-1500)}`)),
    );
  });
}

/** Creates and starts a cluster (a few seconds). The caller must `destroy()` it. */
export async function startPgCluster(): Promise<PgCluster> {
  const as = process.getuid?.() === 0 ? runAsPostgres() : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'sluice-pgcluster-'));
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  mkdirSync(data, { mode: 0o700 });
  if (as) {
    chownSync(dir, as.uid, as.gid);
    chownSync(data, as.uid, as.gid);
  }
  const port = await freePort();
  // fsync off: no OS crash happens here, and an immediate restart recovers from the WAL the
  // server already wrote (synchronous_commit stays on, so an acknowledged commit is in it).
  const options = [
    `-p ${port}`,
    "-c listen_addresses='127.0.0.1'",
    `-k ${dir}`,
    '-c fsync=off',
    '-c full_page_writes=off',
    '-c max_connections=60',
    '-c shared_buffers=16MB',
  ].join(' ');
  const ctl = (...args: string[]) => run('pg_ctl', ['-D', data, '-l', log, '-o', options, ...args], as);
  try {
    await run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync'], as);
    await ctl('start', '-w', '-t', '60');
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    restartImmediate: () => ctl('restart', '-m', 'immediate', '-w', '-t', '60'),
    stopImmediate: () => ctl('stop', '-m', 'immediate', '-w', '-t', '60'),
    start: () => ctl('start', '-w', '-t', '60'),
    logTail(lines = 20) {
      try {
        return readFileSync(log, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
      } catch {
        return '(no server log)';
      }
    },
    async destroy() {
      await ctl('stop', '-m', 'immediate', '-w', '-t', '60').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
