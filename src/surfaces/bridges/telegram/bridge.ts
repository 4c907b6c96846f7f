import { autoRetry } from '@grammyjs/auto-retry';
import { Bot, GrammyError } from 'grammy';
import type { Update } from 'grammy/types';
import type { HostContext } from '../../../host/identity/index.js';
import { announceCommit } from '../../../host/identity/index.js';
import { checkedApiRoot } from './api-root.js';
import { handleApprovalPress, startApprovalCardPump } from './approval-cards.js';
import { FaultCounts, faultText, isRefusal } from './faults.js';
import { handleUpdate, reportAbandoned } from './inbound.js';
import { startOutboundPump } from './outbound.js';
import { startReactionPump } from './reactions.js';
import { type ApiSignal, createReplies } from './replies.js';
import { backoffMs, DEFAULT_RETRY, handleWithRetry, type RetryPolicy, sleep } from './update-retry.js';

export { DEFAULT_TELEGRAM_API_ROOT } from './api-root.js';

export interface TelegramBridgeOptions {
  host: HostContext;
  token: string;
  apiRoot?: string | undefined;
  /** Where a newly paired user's messages go until they choose with `/to`. */
  defaultAgent?: string | undefined;
  /** Long-polling timeout in seconds (Telegram holds getUpdates open this long). */
  pollSeconds?: number;
  /** Deadline of one file download, headers and body (default 60 s). */
  downloadDeadlineMs?: number;
  /** How often an update (and an outbound part) is tried (defaults in {@link DEFAULT_RETRY}). */
  retry?: Partial<RetryPolicy>;
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

/** 401 (bad token) and 409 (another poller or a webhook owns the bot) will not heal by retrying. */
function isFatal(err: unknown): boolean {
  return err instanceof GrammyError && (err.error_code === 401 || err.error_code === 409);
}

/** A signal that fires when `outer` does or after `ms`, whichever is first; `clear` frees the timer. */
function withDeadline(outer: AbortSignal, ms: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const abort = () => controller.abort();
  const timer = setTimeout(abort, ms);
  outer.addEventListener('abort', abort);
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      outer.removeEventListener('abort', abort);
    },
  };
}

/**
 * Runs the Telegram bridge: long-polls getUpdates through grammY and hands each update to the
 * inbound handler one at a time, confirming an update (the next getUpdates offset) only after it
 * was handled; forwards agent messages to paired chats as commits happen in any process.
 */
export async function startTelegramBridge(options: TelegramBridgeOptions): Promise<TelegramBridge> {
  // Refused before any connection: a plain-http root to another machine would carry the token.
  const apiRoot = checkedApiRoot(options.apiRoot);
  const policy: RetryPolicy = { ...DEFAULT_RETRY, ...options.retry };
  const pollSeconds = options.pollSeconds ?? 25;
  const bot = new Bot(options.token, { client: { apiRoot } });
  // 429 retry_after (up to 60 s) is waited out by the maintained plugin, 3 times per call. Network
  // errors and 5xx are rethrown (the plugin would retry network errors without end inside one
  // call): the bridge's own loops retry them with bounds — per update, per outbound part, and
  // with backoff for polling.
  bot.api.config.use(
    autoRetry({
      maxRetryAttempts: 3,
      maxDelaySeconds: 60,
      rethrowHttpErrors: true,
      rethrowInternalServerErrors: true,
    }),
  );
  const abort = new AbortController();
  const { host, log } = options;
  const counts = new FaultCounts();

  let me: Awaited<ReturnType<typeof bot.api.getMe>> | undefined;
  for (let attempt = 0; !me; attempt++) {
    try {
      me = await bot.api.getMe();
    } catch (err) {
      // A refusal (bad token, wrong root) ends the start; Telegram out of reach is waited out.
      if (isFatal(err) || isRefusal(err)) throw err;
      log(`cannot reach Telegram: ${faultText(err)}; retrying`);
      await sleep(backoffMs(policy, attempt), abort.signal);
    }
  }
  bot.botInfo = me;
  const botId = String(me.id);

  const inbound = {
    host,
    botId,
    fileUrl: (filePath: string) => `${apiRoot}/file/bot${options.token}/${filePath}`,
    apiOrigin: new URL(apiRoot).origin,
    downloadDeadlineMs: options.downloadDeadlineMs,
    defaultAgent: options.defaultAgent,
    replies: createReplies({ api: bot.api, counts, log }),
    counts,
    log,
    // An agent may move the message before its tracking row exists: read its channel once more.
    onTracked(channelId: string) {
      reactions.recheckChannel(channelId);
      if (reactionTimer === undefined) reactions.poke();
    },
  };
  bot.on('message', (c) => handleUpdate(inbound, c));
  bot.on('callback_query', (c) => handleApprovalPress(inbound, c));

  // After a failed scan the next one waits for its backoff: commits meanwhile do not hurry it (they
  // would spend a failing part's tries in a burst).
  let outboundFailures = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  const pump = startOutboundPump({
    host,
    api: bot.api,
    botId,
    log,
    partAttempts: policy.updateAttempts,
    counts,
    onError(err) {
      log(`forwarding paused: ${faultText(err)}; retrying`);
      clearTimeout(retryTimer);
      retryTimer = setTimeout(
        () => {
          retryTimer = undefined;
          pump.poke();
        },
        backoffMs(policy, outboundFailures++),
      );
    },
    onCaughtUp() {
      outboundFailures = 0;
    },
  });
  // Reactions on the person's own messages follow the same commits, with their own backoff.
  let reactionFailures = 0;
  let reactionTimer: NodeJS.Timeout | undefined;
  const reactions = startReactionPump({
    host,
    api: bot.api,
    counts,
    log,
    onError(err) {
      log(`reactions paused: ${faultText(err)}; retrying`);
      clearTimeout(reactionTimer);
      reactionTimer = setTimeout(
        () => {
          reactionTimer = undefined;
          reactions.poke();
        },
        backoffMs(policy, reactionFailures++),
      );
    },
    onCaughtUp() {
      reactionFailures = 0;
    },
  });
  // Approval cards (Allow / Deny) follow the same commits, with their own backoff.
  let cardFailures = 0;
  let cardTimer: NodeJS.Timeout | undefined;
  const cards = startApprovalCardPump({
    host,
    api: bot.api,
    counts,
    log,
    onError(err) {
      log(`approval cards paused: ${faultText(err)}; retrying`);
      clearTimeout(cardTimer);
      cardTimer = setTimeout(
        () => {
          cardTimer = undefined;
          cards.poke();
        },
        backoffMs(policy, cardFailures++),
      );
    },
    onCaughtUp() {
      cardFailures = 0;
    },
  });
  const wake = () => {
    if (retryTimer === undefined) pump.poke();
    if (reactionTimer === undefined) reactions.poke();
    if (cardTimer === undefined) cards.poke();
  };
  const unwatch = host.store.watchChanges(wake);
  host.localCommitListeners.add(wake);
  pump.poke();
  reactions.poke();
  cards.poke();

  let offset: number | undefined;
  const handleOne = (update: Update) =>
    handleWithRetry(update, {
      async handle(u) {
        await bot.handleUpdate(u);
        announceCommit(host);
      },
      signal: abort.signal,
      policy,
      counts,
      log,
      onAbandon: (u, cause) => reportAbandoned(inbound, u, cause),
    });

  const poll = async () => {
    for (let attempt = 0; !abort.signal.aborted; ) {
      let updates: Update[];
      // A long poll that outlives its timeout by 30 s is a dead connection, not a slow answer.
      const deadline = withDeadline(abort.signal, (pollSeconds + 30) * 1000);
      try {
        updates = await bot.api.getUpdates(
          { offset, timeout: pollSeconds, allowed_updates: ['message', 'callback_query'] },
          deadline.signal as ApiSignal,
        );
        attempt = 0;
      } catch (err) {
        if (abort.signal.aborted) break;
        if (isFatal(err)) throw err;
        log(`getUpdates failed: ${faultText(err)}; retrying`);
        await sleep(backoffMs(policy, attempt++), abort.signal);
        continue;
      } finally {
        deadline.clear();
      }
      for (const update of updates) {
        if (abort.signal.aborted || !(await handleOne(update))) break;
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
    clearTimeout(reactionTimer);
    clearTimeout(cardTimer);
    await Promise.all([pump.stop(), reactions.stop(), cards.stop()]);
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
