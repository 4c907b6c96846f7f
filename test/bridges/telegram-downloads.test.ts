// Issue 25 item 4: bridge downloads go only where they should. A Bot API root whose file endpoint
// redirects elsewhere (standing in for an internal URL: another port on 127.0.0.1) is not
// followed and nothing is stored; a download past its deadline is abandoned; a plain-http root to
// another machine is refused before any connection.
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createTcpServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { readMediaBytes } from '../../src/host/media/media.js';
import { startTelegramBridge } from '../../src/surfaces/bridges/telegram/bridge.js';
import { backendsUnderTest } from '../conformance/backend.js';
import { FAKE_BOT_TOKEN } from '../support/fake-telegram.js';
import { runCli, tempHome } from '../support/host.js';
import { PHONE, useBridgeHarness } from './telegram-harness.js';

/** An HTTP server standing in for an internal service: it counts every request it gets. */
async function internalService(): Promise<{ url: string; hits: () => number; close(): Promise<void> }> {
  let hits = 0;
  const server: Server = createHttpServer((_req, res) => {
    hits++;
    res.end('internal secrets');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/latest/meta-data`,
    hits: () => hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe.each(backendsUnderTest())('Telegram bridge downloads on %s', (backend) => {
  const h = useBridgeHarness(backend, 'tgdownloads');

  async function mediaRows() {
    return h.t.ctx.store.db.selectFrom('media').selectAll().execute();
  }

  it('does not follow a file download redirected to another origin, and stores nothing', async () => {
    const internal = await internalService();
    closers.push(internal.close);
    await h.start();
    await h.pairPhone();
    const file = h.fake.addFile(Buffer.from('the real bytes'), undefined, { redirectTo: internal.url });
    const id = h.fake.pushMessage(PHONE, { document: { ...file, file_name: 'x.pdf' }, caption: 'see this' });
    await h.fake.until(() => h.fake.confirmedOffset() > id, 20_000, 'the confirmation');
    expect(internal.hits()).toBe(0);
    expect(h.fake.downloads).toHaveLength(1);
    expect(await mediaRows()).toHaveLength(0);
    expect(await h.messageRows()).toHaveLength(0);
    expect(h.textsTo(PHONE).some((x) => /could not be fetched/.test(x))).toBe(true);
    const line = h.logs.find((l) => /redirected/.test(l));
    expect(line).toMatch(/redirected to http:\/\/127\.0\.0\.1:\d+, outside the API root; refused/);
    expect(line).not.toContain(FAKE_BOT_TOKEN);
    // The bridge goes on: the next message gets through.
    h.fake.pushMessage(PHONE, { text: 'and this?' });
    expect((await h.untilMessages(1)).map((r) => r.body)).toEqual(['and this?']);
  });

  it("follows a redirect within the API root's origin", async () => {
    await h.start();
    await h.pairPhone();
    const real = h.fake.addFile(Buffer.from('moved bytes'));
    const moved = `${h.fake.url}/file/bot${FAKE_BOT_TOKEN}/documents/file_1`;
    const file = h.fake.addFile(Buffer.from('unused'), undefined, { redirectTo: moved });
    expect(real.file_id).toBe('file-1');
    h.fake.pushMessage(PHONE, { document: { ...file, file_name: 'moved.txt' }, caption: 'moved' });
    const [row] = await h.untilMessages(1);
    const [ref] = JSON.parse(row?.attachments ?? '[]');
    const { bytes } = await readMediaBytes(h.t.ctx, h.t.owner, ref.attachment_id);
    expect(Buffer.from(bytes).toString()).toBe('moved bytes');
    expect(h.fake.downloads).toEqual(['documents/file_2', 'documents/file_1']);
  });

  it('abandons a download that outlives its deadline, stores nothing and goes on', async () => {
    const deadlineMs = 1000;
    await h.start(undefined, { downloadDeadlineMs: deadlineMs });
    await h.pairPhone();
    const file = h.fake.addFile(Buffer.alloc(64 * 1024, 1), undefined, { stallAfter: 1024 });
    const began = Date.now();
    const id = h.fake.pushMessage(PHONE, { document: { ...file, file_name: 'slow.bin' } });
    await h.fake.until(() => h.fake.confirmedOffset() > id, 20_000, 'the confirmation');
    const took = Date.now() - began;
    expect(took).toBeGreaterThanOrEqual(deadlineMs);
    expect(await mediaRows()).toHaveLength(0);
    expect(await h.messageRows()).toHaveLength(0);
    expect(h.textsTo(PHONE).some((x) => /within 1 s/.test(x))).toBe(true);
    expect(h.logs.filter((l) => /deadline/.test(l))).toHaveLength(1);
    h.fake.pushMessage(PHONE, { text: 'after the slow file' });
    expect((await h.untilMessages(1)).map((r) => r.body)).toEqual(['after the slow file']);
  });
});

describe('a plain-http API root to another machine', () => {
  /** This machine's first non-loopback IPv4 address, if it has one. */
  function externalAddress(): string | undefined {
    for (const list of Object.values(networkInterfaces())) {
      for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
    }
    return undefined;
  }

  it('is refused at start with one line, before any connection', async () => {
    // A listener on a non-loopback address of this machine counts connections, when there is one;
    // otherwise a documentation address (TEST-NET-1) that nothing answers on.
    const address = externalAddress();
    let connections = 0;
    let root = 'http://192.0.2.123:8081';
    if (address) {
      const listener = createTcpServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => listener.listen(0, address, resolve));
      closers.push(() => new Promise<void>((resolve) => listener.close(() => resolve())));
      root = `http://${address}:${(listener.address() as AddressInfo).port}`;
    }
    const lines: string[] = [];
    const failure = await startTelegramBridge({
      host: undefined as never,
      token: FAKE_BOT_TOKEN,
      apiRoot: root,
      log: (line) => lines.push(line),
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(SluiceError);
    expect((failure as SluiceError).code).toBe('invalid_params');
    expect((failure as SluiceError).message).toMatch(/plain http:\/\/ to another machine.*use https:\/\//);
    expect((failure as SluiceError).message).not.toMatch(/\n/);
    expect(connections).toBe(0);
    expect(lines).toEqual([]);
  });

  it('is refused by `sluice bridge telegram` with one line and exit 1', async () => {
    const { home, cleanup } = tempHome('sluice-tg-root-');
    closers.push(async () => cleanup());
    expect((await runCli(['init'], { home })).code).toBe(0);
    const result = await runCli(['bridge', 'telegram', '--api-root', 'http://10.1.2.3:8081'], {
      home,
      env: { SLUICE_TELEGRAM_TOKEN: FAKE_BOT_TOKEN },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/invalid_params.*http:\/\/10\.1\.2\.3:8081 is plain http:\/\//);
  });
});
