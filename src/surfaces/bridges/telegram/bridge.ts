import { autoRetry } from '@grammyjs/auto-retry';
import { Bot, GrammyError } from 'grammy';
import type { Update } from 'grammy/types';
import type { HostContext } from '../../../host/context.js';
import { announceCommit } from '../../../host/context.js';
import { handleUpdate } from './inbound.js';
import { startOutboundPump } from './outbound.js';

export const DEFAULT_TELEGRAM_API_ROOT = 'https://api.telegram.org';

export interface TelegramBridgeOptions {
  host: HostContext;
  token: string;
  apiRoot?: string | undefined;
  /** Where a newly paired user's messages go until they choose with `/to`. */
  defaultAgent?: string | undefined;
  /** Long-polling timeout in seconds (Telegram holds getUpdates open this long). */
  pollSeconds?: number;
  log(line: string): void;
}

export interface TelegramBridge {
  /** The bot's username, once connected. */
  readonly username: string;
  /** Resolves when the bridge has stopped (by `stop()` or a fatal error, which it rejects with). */
  readonly done: Promise<void>;
  /** Finishes the update in hand, confirms it to Telegram, stops forwarding, and resolves. */
  stop(): Promise<void>;
}

// The abort listener goes when the sleep ends either way: the bridge sleeps on one signal for
// its whole life, and listeners left behind pile up (Node warns past ten).
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

/** Jittered exponential backoff: 1 s, 2 s, 4 s … up to 60 s. */
function backoffMs(attempt: number): number {
  const base = Math.min(60_000, 1000 * 2 ** Math.min(attempt, 6));
  return base / 2 + Math.random() * (base / 2);
}

/** 401 (bad token) and 409 (another poller or a webhook owns the bot) will not heal by retrying. */
function isFatal(err: unknown): boolean {
  return err instanceof GrammyError && (err.error_code === 401 || err.error_code === 409);
}

/**
 * Runs the Telegram bridge: long-polls getUpdates through grammY and hands each update to the
 * inbound handler one at a time, confirming an update (the next getUpdates offset) only after it
 * was handled; forwards agent messages to paired chats as commits happen in any process.
 */
export async function startTelegramBridge(options: TelegramBridgeOptions): Promise<TelegramBridge> {
  const apiRoot = (options.apiRoot ?? DEFAULT_TELEGRAM_API_ROOT).replace(/\/+$/, '');
  const bot = new Bot(options.token, { client: { apiRoot } });
  // 429 retry_after and network errors are retried with backoff by the maintained plugin.
  bot.api.config.use(autoRetry({ maxRetryAttempts: 5, maxDelaySeconds: 60, rethrowHttpErrors: false }));
  const abort = new AbortController();
  const { host, log } = options;

  let me: Awaited<ReturnType<typeof bot.api.getMe>> | undefined;
  for (let attempt = 0; !me; attempt++) {
    try {
      me = await bot.api.getMe();
    } catch (err) {
      if (isFatal(err) || attempt >= 4) throw err;
      await sleep(backoffMs(attempt), abort.signal);
    }
  }
  bot.botInfo = me;
  const botId = String(me.id);

  const inbound = {
    host,
    botId,
    fileUrl: (filePath: string) => `${apiRoot}/file/bot${options.token}/${filePath}`,
    defaultAgent: options.defaultAgent,
    log,
  };
  bot.on('message', (c) => handleUpdate(inbound, c));

  let outboundFailures = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  const pump = startOutboundPump({
    host,
    api: bot.api,
    botId,
    log,
    onError(err) {
      log(`forwarding paused: ${(err as Error).message}; retrying`);
      clearTimeout(retryTimer);
      retryTimer = setTimeout(() => pump.poke(), backoffMs(outboundFailures++));
    },
  });
  const wake = () => {
    outboundFailures = 0;
    pump.poke();
  };
  const unwatch = host.store.watchChanges(wake);
  host.localCommitListeners.add(wake);
  pump.poke();

  let offset: number | undefined;
  const handleWithRetry = async (update: Update): Promise<boolean> => {
    for (let attempt = 0; ; attempt++) {
      try {
        await bot.handleUpdate(update);
        announceCommit(host);
        return true;
      } catch (err) {
        const cause = (err as { error?: unknown }).error ?? err;
        log(`update ${update.update_id} not handled yet: ${(cause as Error).message}; retrying`);
        if (abort.signal.aborted) return false;
        await sleep(backoffMs(attempt), abort.signal);
        if (abort.signal.aborted) return false;
      }
    }
  };

  const poll = async () => {
    for (let attempt = 0; !abort.signal.aborted; ) {
      let updates: Update[];
      try {
        updates = await bot.api.getUpdates(
          { offset, timeout: options.pollSeconds ?? 25, allowed_updates: ['message'] },
          // grammY types its signal with its own AbortController shim; Node's is the same at run time.
          abort.signal as Parameters<typeof bot.api.getUpdates>[1],
        );
        attempt = 0;
      } catch (err) {
        if (abort.signal.aborted) break;
        if (isFatal(err)) throw err;
        log(`getUpdates failed: ${(err as Error).message}; retrying`);
        await sleep(backoffMs(attempt++), abort.signal);
        continue;
      }
      for (const update of updates) {
        if (abort.signal.aborted || !(await handleWithRetry(update))) break;
        offset = update.update_id + 1;
      }
    }
    // Confirm what was handled, so Telegram does not hand it out again.
    // Bounded: a stopping bridge does not wait out retries against an unreachable server (the
    // updates are deduplicated by their keys when they come again).
    if (offset !== undefined) {
      const confirm = bot.api.raw.getUpdates({ offset, limit: 1, timeout: 0 }).catch(() => {});
      await Promise.race([confirm, new Promise((r) => setTimeout(r, 3000).unref())]);
    }
  };

  const stopForwarding = async () => {
    unwatch();
    host.localCommitListeners.delete(wake);
    clearTimeout(retryTimer);
    await pump.stop();
  };
  const done = poll().finally(stopForwarding);
  return {
    username: me.username,
    done,
    async stop() {
      abort.abort();
      await done;
    },
  };
}
