import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { runCli, SLUICE_BIN, tempHome } from '../support/host.js';
import { headersOnly, openRaw, type RawConnection } from './support/raw-socket.js';

/**
 * The host's memory stays flat under the three ways a client can make it hold bytes: a WebSocket
 * that never reads its replies, downloads nobody reads, and requests whose bodies never finish.
 * `sluice serve` runs in its own process; its resident set is read from /proc.
 */
const BUDGET_MIB = 50;
const BLOB_MIB = 60;

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1]);
  return kb / 1024;
}

/** The largest resident set seen while `ms` pass (a measurement window, not a synchronisation). */
async function peakRss(pid: number, ms = 2_000): Promise<number> {
  let peak = rssMiB(pid);
  const end = Date.now() + ms;
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50));
    peak = Math.max(peak, rssMiB(pid));
  }
  return peak;
}

describe.skipIf(process.platform !== 'linux')('host memory under clients that do not read or finish', () => {
  const { home, cleanup } = tempHome('sluice-mem-');
  let child: ChildProcess;
  let url: string;
  let token: string;
  let channelId: string;
  let blobId: string;
  let baseline: number;
  const pid = () => child.pid as number;
  const auth = () => ({ authorization: `Bearer ${token}` });

  const rpc = async (method: string, params: unknown) => {
    const res = await fetch(`${url}/rpc`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const reply = (await res.json()) as { result?: Record<string, unknown>; error?: unknown };
    if (!reply.result) throw new Error(`${method}: ${JSON.stringify(reply.error)}`);
    return reply.result;
  };

  /** Starts `sluice serve` on the home (a fresh process each time) and sets `url`. */
  const serve = async () => {
    child = spawn(process.execPath, [SLUICE_BIN, 'serve', '--port', '0'], {
      env: {
        ...process.env,
        SLUICE_HOME: home,
        SLUICE_AS: '',
        SLUICE_LOG_LEVEL: 'warn',
        SLUICE_HTTP_LIMITS: 'maxDownloadsPerPrincipal=32',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    url = await new Promise<string>((resolve, reject) => {
      let out = '';
      let err = '';
      child.stderr?.on('data', (d: Buffer) => {
        err += d.toString();
      });
      child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const match = /serving (https?:\/\/[^\s/]+)/.exec(out);
        if (match?.[1]) resolve(match[1]);
      });
    });
  };

  beforeAll(async () => {
    for (const args of [['init'], ['agent', 'add', 'helper']]) {
      const r = await runCli(args, { home });
      if (r.code !== 0) throw new Error(`sluice ${args.join(' ')}: ${r.stderr}`);
    }
    const issued = await runCli(['token', 'owner'], { home });
    token = issued.stdout.trim().split('\n').pop() as string;
    await serve();

    // A channel whose history pages fill the reply budget, and one large attachment.
    let sent: Record<string, unknown> = {};
    for (let i = 0; i < 150; i++)
      sent = await rpc('message.send', { to: 'helper', body: `${i} `.padEnd(4000, 'x') });
    channelId = sent.channel_id as string;
    const up = await fetch(`${url}/media`, {
      method: 'POST',
      headers: { ...auth(), 'x-filename': 'large.bin' },
      body: randomBytes(BLOB_MIB * 1024 * 1024),
    });
    blobId = ((await up.json()) as { attachment_id: string }).attachment_id;
    // A fresh host process, so the baseline holds no garbage from setting up; then every path
    // is warmed once, so it includes the code and pools they load.
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    await serve();
    await (await fetch(`${url}/media/${blobId}`, { headers: auth() })).arrayBuffer();
    await rpc('channel.history', { channelId, size: 200 });
    baseline = await peakRss(pid(), 500);
  }, 120_000);

  afterAll(() => {
    child?.kill('SIGKILL');
    cleanup();
  });

  it('a WebSocket client that sends 1,000 history requests and never reads', async () => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/rpc`, { headers: auth() });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    (ws as unknown as { _socket: { pause(): void } })._socket.pause();
    for (let i = 0; i < 1000; i++) {
      ws.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: 'channel.history',
          params: { channelId, size: 200 },
        }),
      );
    }
    // Long enough for a host that kept answering to pass the budget (~12 MiB/s of replies here).
    const peak = await peakRss(pid(), 5_000);
    ws.terminate();
    console.log(
      `slow WebSocket reader: +${(peak - baseline).toFixed(1)} MiB over ${baseline.toFixed(0)} MiB`,
    );
    expect(peak - baseline).toBeLessThan(BUDGET_MIB);
  });

  it(`20 downloads of a ${BLOB_MIB} MiB attachment that nobody reads`, async () => {
    const readers: RawConnection[] = [];
    for (let i = 0; i < 20; i++) {
      const raw = await openRaw(url);
      raw.write(headersOnly(url, 'GET', `/media/${blobId}`, auth()));
      await raw.waitFor('HTTP/1.1 200');
      raw.socket.pause();
      readers.push(raw);
    }
    const peak = await peakRss(pid());
    for (const raw of readers) raw.destroy();
    console.log(`20 unread downloads: +${(peak - baseline).toFixed(1)} MiB over ${baseline.toFixed(0)} MiB`);
    expect(peak - baseline).toBeLessThan(BUDGET_MIB);
  });

  it('64 half-sent 4 MiB requests without a token and 64 with one', async () => {
    const conns: RawConnection[] = [];
    const half = Buffer.alloc(2 * 1024 * 1024, 0x20);
    for (let i = 0; i < 128; i++) {
      const raw = await openRaw(url);
      const headers = { 'content-type': 'application/json', 'content-length': 4 * 1024 * 1024 };
      raw.write(headersOnly(url, 'POST', '/rpc', i % 2 === 0 ? headers : { ...headers, ...auth() }));
      raw.write(half);
      conns.push(raw);
    }
    const peak = await peakRss(pid());
    for (const raw of conns) raw.destroy();
    console.log(
      `128 half-sent requests: +${(peak - baseline).toFixed(1)} MiB over ${baseline.toFixed(0)} MiB`,
    );
    expect(peak - baseline).toBeLessThan(BUDGET_MIB);
  });
});
