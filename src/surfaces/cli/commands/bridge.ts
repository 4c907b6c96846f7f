import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import { resolveAgent } from '../../../host/identity/index.js';
import { createPairCode } from '../../../host/telegram/index.js';
import { checkedApiRoot } from '../../bridges/telegram/api-root.js';
import { startTelegramBridge } from '../../bridges/telegram/bridge.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';

interface TelegramFlags {
  token?: string;
  apiRoot?: string;
  agent?: string;
}

// Bot API tokens look like 123456789:AAH…; checking the shape catches a pasted chat id or URL early.
const TOKEN_SHAPE = /^\d{1,20}:[A-Za-z0-9_-]{20,100}$/;

function tokenFrom(flags: TelegramFlags): string {
  const token = flags.token ?? process.env.SLUICE_TELEGRAM_TOKEN;
  if (!token) {
    throw new SluiceError(
      'invalid_params',
      'no bot token: pass --token or set SLUICE_TELEGRAM_TOKEN (see docs/telegram.md)',
    );
  }
  if (!TOKEN_SHAPE.test(token)) {
    throw new SluiceError(
      'invalid_params',
      'that is not a bot token (BotFather gives one like 123456789:AAH…)',
    );
  }
  return token;
}

/** The API root from the flag or environment, refused unless https:// or http:// to localhost. */
function apiRootFrom(flags: TelegramFlags): string | undefined {
  const root = flags.apiRoot ?? process.env.SLUICE_TELEGRAM_API_ROOT;
  return root === undefined ? undefined : checkedApiRoot(root);
}

function clock(): string {
  return new Date().toISOString().slice(11, 19);
}

/** `sluice bridge telegram [--token T] [--api-root URL] [--agent NAME]` and `… pair PERSON`. */
export function registerBridgeCommands(program: Command): void {
  const bridge = program.command('bridge').description('connect Sluice to other messengers');
  const telegram = bridge
    .command('telegram')
    .description(
      'run the Telegram bridge: paired people message agents from their phones, until SIGTERM/SIGINT',
    )
    .option('--token <token>', 'the bot token from BotFather (env SLUICE_TELEGRAM_TOKEN)')
    .option(
      '--api-root <url>',
      'Bot API server (env SLUICE_TELEGRAM_API_ROOT; default https://api.telegram.org)',
    )
    .option('--agent <name>', 'the agent a newly paired person talks to until they choose with /to');
  telegram.action(
    action(async ({ host }, flags: TelegramFlags) => {
      const token = tokenFrom(flags);
      const apiRoot = apiRootFrom(flags);
      if (flags.agent !== undefined) await resolveAgent(host, flags.agent);
      const log = (line: string) => process.stdout.write(`${clock()} telegram: ${line}\n`);
      const running = await startTelegramBridge({ host, token, apiRoot, defaultAgent: flags.agent, log });
      await writeOut(
        `Telegram bridge running as @${running.username} (home ${host.home}). Pair a phone with: sluice bridge telegram pair PERSON. Ctrl-C stops it.\n`,
      );
      const stop = () => {
        process.off('SIGTERM', stop);
        process.off('SIGINT', stop);
        log('stopping');
        void running.stop();
      };
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
      try {
        await running.done;
      } finally {
        process.off('SIGTERM', stop);
        process.off('SIGINT', stop);
      }
      log('stopped');
    }),
  );
  telegram
    .command('pair')
    .description('print a one-time code (10 minutes) that pairs a Telegram account with PERSON')
    .argument('<person>', 'the person the Telegram account will act as')
    .action(
      action(async ({ host }, person: string) => {
        const { code, person: name } = await createPairCode(host, person);
        // The code is the last word: scripts and tests take it with `awk '{print $NF}'`.
        await writeOut(
          `Send this to the bot within 10 minutes to act as ${name} (it works once): /pair ${code}\n`,
        );
      }),
    );
}
