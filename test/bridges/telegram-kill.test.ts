import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostContext } from '../../src/host/identity/context.js';
import { openHost } from '../../src/host/identity/home.js';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram } from '../support/fake-telegram.js';
import { runCli, SLUICE_BIN, tempHome } from '../support/host.js';

// `sluice bridge telegram` as a real process, killed with SIGKILL mid-stream and restarted.
const PHONE = 5550101;

let fake: FakeTelegram;
let home: string;
let cleanup: () => void;
let ctx: HostContext;
let bridge: ChildProcess | undefined;
let output = '';

function startBridge(): ChildProcess {
  const child = spawn(
    process.execPath,
    [SLUICE_BIN, 'bridge', 'telegram', '--api-root', fake.url, '--agent', 'helper'],
    {
      env: { ...process.env, SLUICE_HOME: home, SLUICE_AS: '', SLUICE_TELEGRAM_TOKEN: FAKE_BOT_TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  bridge = child;
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

async function bodies(): Promise<string[]> {
  const rows = await ctx.store.db.selectFrom('messages').select('body').orderBy('seq').execute();
  return rows.map((r) => r.body);
}

/** Resolves once `check` holds, re-checked whenever any process commits (the store's own watch). */
function untilStore(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let busy = false;
    let again = false;
    const stop = ctx.store.watchChanges(run);
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`timed out waiting for ${what}; bridge output:\n${output.slice(-2000)}`));
    }, timeoutMs);
    async function run() {
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      do {
        again = false;
        if (await check()) {
          clearTimeout(timer);
          stop();
          resolve();
          return;
        }
      } while (again);
      busy = false;
    }
    void run();
  });
}

beforeAll(async () => {
  ({ home, cleanup } = tempHome('sluice-telegram-'));
  fake = await startFakeTelegram();
  expect((await runCli(['init'], { home })).code).toBe(0);
  expect((await runCli(['agent', 'add', 'helper'], { home })).code).toBe(0);
  ctx = await openHost({ home, durability: 'normal', pollMs: 10 });
}, 60_000);

afterAll(async () => {
  if (bridge && bridge.exitCode === null && bridge.signalCode === null) await kill(bridge);
  await ctx?.store.close();
  await fake?.close();
  cleanup?.();
});

describe('sluice bridge telegram under kill -9', () => {
  it('pairs from the code that `pair` prints last, and stops cleanly on SIGTERM', async () => {
    const paired = await runCli(['bridge', 'telegram', 'pair', 'owner'], { home });
    expect(paired.code).toBe(0);
    const code = paired.stdout.trim().split(/\s+/).pop() as string;
    const child = startBridge();
    fake.pushMessage(PHONE, { text: `/pair ${code}` });
    await fake.until(() => fake.sent.some((s) => s.text?.startsWith('Paired')), 30_000, 'the pairing reply');
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).not.toContain(FAKE_BOT_TOKEN);
  });

  it('stores every update exactly once across a SIGKILL mid-stream', async () => {
    const texts = Array.from({ length: 40 }, (_, i) => `phone message ${i}`);
    let child = startBridge();
    let last = 0;
    for (const text of texts) last = fake.pushMessage(PHONE, { text });
    await untilStore(async () => (await bodies()).length >= 10, '10 stored messages');
    await kill(child);
    child = startBridge();
    await untilStore(async () => (await bodies()).length >= texts.length, 'all messages');
    await fake.until(() => fake.confirmedOffset() > last, 30_000, 'every update confirmed');
    expect(await bodies()).toEqual(texts);
    await kill(child);
  });

  it('delivers every agent message after a SIGKILL, repeating at most the part in flight', async () => {
    const helper = await resolvePrincipal(ctx, 'helper');
    const replies = Array.from({ length: 20 }, (_, i) => `agent reply ${i}`);
    const before = fake.sent.length;
    let child = startBridge();
    await fake.until(() => fake.sent.length >= before, 10_000, 'the bridge');
    for (const body of replies) await sendMessage(ctx, helper, { to: 'owner', body });
    const arrived = () => fake.sent.slice(before).map((s) => s.text ?? '');
    await fake.until(() => arrived().length >= 5, 30_000, '5 replies');
    await kill(child);
    child = startBridge();
    await fake.until(() => replies.every((r) => arrived().includes(r)), 30_000, 'every reply');
    const got = arrived();
    // Order is kept, and only a part accepted in the instant before the kill can come twice.
    expect([...new Set(got)]).toEqual(replies);
    expect(got.length - replies.length).toBeLessThanOrEqual(1);
    await kill(child);
  });
});
