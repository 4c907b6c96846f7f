// One Telegram bridge in this process against the fake Bot API, on a fresh host per test: the
// helpers the bridge test files share (start, pair a phone, wait for stored messages).
import { afterAll, afterEach, beforeEach } from 'vitest';
import type { HostContext } from '../../src/host/identity/context.js';
import { createPairCode } from '../../src/host/telegram/telegram.js';
import {
  startTelegramBridge,
  type TelegramBridge,
  type TelegramBridgeOptions,
} from '../../src/surfaces/bridges/telegram/bridge.js';
import { type Backend, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram } from '../support/fake-telegram.js';

export const PHONE = 5550001;
export const STRANGER = 5550666;

export interface BridgeHarness {
  readonly t: ConformanceHost;
  readonly fake: FakeTelegram;
  /** The lines the running bridge logged (emptied before each test). */
  readonly logs: string[];
  start(ctx?: HostContext, extra?: Partial<TelegramBridgeOptions>): Promise<TelegramBridge>;
  /** Stops the running bridge (if any). */
  stop(): Promise<void>;
  textsTo(chatId: number): string[];
  pairPhone(userId?: number, person?: string): Promise<void>;
  messageRows(): Promise<MessageRow[]>;
  untilMessages(n: number, timeoutMs?: number): Promise<MessageRow[]>;
}

type MessageRow = Awaited<ReturnType<typeof selectMessages>>[number];

function selectMessages(ctx: HostContext) {
  return ctx.store.db.selectFrom('messages').selectAll().orderBy('seq').execute();
}

/**
 * Registers beforeEach/afterEach hooks that open a host with agents `helper` and `reviewer` and a
 * fake Bot API, and close both (and any bridge left running) after the test.
 */
export function useBridgeHarness(backend: Backend, label: string): BridgeHarness {
  const hosts = conformanceHostSeries(backend, label);
  let t: ConformanceHost | undefined;
  let fake: FakeTelegram | undefined;
  let bridge: TelegramBridge | undefined;
  const logs: string[] = [];
  afterAll(() => hosts.release());
  beforeEach(async () => {
    t = await hosts.open();
    await t.agent('helper');
    await t.agent('reviewer');
    fake = await startFakeTelegram();
    logs.length = 0;
  });
  afterEach(async () => {
    await bridge?.stop();
    bridge = undefined;
    await fake?.close();
    await t?.close();
  });

  const h: BridgeHarness = {
    get t() {
      if (!t) throw new Error('no host: the harness runs inside a test');
      return t;
    },
    get fake() {
      if (!fake) throw new Error('no fake Telegram: the harness runs inside a test');
      return fake;
    },
    logs,
    async start(ctx = h.t.ctx, extra = {}) {
      bridge = await startTelegramBridge({
        host: ctx,
        token: FAKE_BOT_TOKEN,
        apiRoot: h.fake.url,
        defaultAgent: 'helper',
        log: (line) => logs.push(line),
        ...extra,
      });
      return bridge;
    },
    async stop() {
      await bridge?.stop();
      bridge = undefined;
    },
    textsTo(chatId) {
      return h.fake.sent
        .filter((s) => s.chatId === String(chatId) && s.method === 'sendMessage')
        .map((s) => s.text ?? '');
    },
    async pairPhone(userId = PHONE, person = 'owner') {
      const { code } = await createPairCode(h.t.ctx, person);
      h.fake.pushMessage(userId, { text: `/pair ${code}` });
      await h.fake.until(
        () => h.textsTo(userId).some((x) => x.startsWith('Paired')),
        20_000,
        'the pairing reply',
      );
    },
    messageRows: () => selectMessages(h.t.ctx),
    untilMessages(n, timeoutMs = 20_000) {
      // Re-checked after each commit of the in-process bridge (no polling, no sleeps).
      const ctx = h.t.ctx;
      return new Promise((resolve, reject) => {
        let checking = false;
        let again = false;
        const done = (fn: () => void) => {
          clearTimeout(timer);
          ctx.localCommitListeners.delete(check);
          fn();
        };
        const timer = setTimeout(
          () => done(() => reject(new Error(`timed out waiting for ${n} stored messages`))),
          timeoutMs,
        );
        async function check() {
          if (checking) {
            again = true;
            return;
          }
          checking = true;
          do {
            again = false;
            const rows = await selectMessages(ctx);
            if (rows.length >= n) return done(() => resolve(rows));
          } while (again);
          checking = false;
        }
        ctx.localCommitListeners.add(check);
        void check();
      });
    },
  };
  return h;
}
