import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A `nats-server -js` of the bench's own, on a free loopback port with its store in a temp dir. */
export interface NatsServer {
  url: string;
  /** Where JetStream keeps its files (for the storage row). */
  storeDir: string;
  /** CPU (user + system) the server has used so far, in ms (from /proc; 0 where there is none). */
  cpuMs(): number;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts `nats-server -js`, resolving once it says it is ready; undefined when the machine has no
 * `nats-server` (the rows then say so instead of a number).
 */
export async function startNatsServer(): Promise<NatsServer | undefined> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-nats-'));
  const port = await freePort();
  const child: ChildProcess = spawn(
    'nats-server',
    ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const ready = await new Promise<boolean>((resolve) => {
    let seen = '';
    const timer = setTimeout(() => resolve(false), 15_000);
    child.once('error', () => {
      clearTimeout(timer);
      resolve(false);
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('Server is ready')) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  if (!ready) {
    await stop();
    return undefined;
  }
  const cpuMs = () => {
    try {
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    } catch {
      return 0;
    }
  };
  return { url: `nats://127.0.0.1:${port}`, storeDir: dir, cpuMs, stop };
}
