import { SluiceError } from '../../core/errors.js';
import { quoteInput } from '../../core/text.js';
import { type HookClient, isHookClient } from './adapters.js';

/** `sluice wait --as AGENT [--for claude|codex] [--timeout S] [--hook] [--session KEY]`. */
export interface WaitArgs {
  as: string | undefined;
  home: string | undefined;
  db: string | undefined;
  /** The client whose cap and wake convention apply; undefined for the provider-neutral envelope. */
  client: HookClient | undefined;
  /** Seconds to wait before ending quietly; undefined waits until mail comes. */
  timeoutS: number | undefined;
  /** Run as the client's wake hook: the hook payload is on stdin (session, prompt, event). */
  hook: boolean;
  /** Remember what this caller was woken for under this key (outside a hook). */
  session: string | undefined;
}

export const WAIT_USAGE =
  'usage: sluice wait --as AGENT [--for claude|codex] [--timeout S] [--hook] [--session KEY] [--home DIR] [--db URL]';

const VALUE_OPTIONS = new Set(['--as', '--home', '--db', '--for', '--timeout', '--session']);

/** The longest `--timeout` (24.8 days: the largest delay a Node timer takes). */
export const MAX_WAIT_TIMEOUT_S = 2_147_483;

/** Parses the command line by hand, like the hook: commander costs more than a wait's start. */
export function parseWaitArgs(argv: readonly string[]): WaitArgs {
  const values = new Map<string, string>();
  let hook = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--hook') {
      hook = true;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (!VALUE_OPTIONS.has(name)) {
      const what = arg.startsWith('-') ? 'unknown option' : 'unexpected argument';
      throw new SluiceError('invalid_params', `${what} ${quoteInput(arg, 40)}; ${WAIT_USAGE}`);
    }
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === '') throw new SluiceError('invalid_params', `${name} needs a value`);
    values.set(name, value);
  }
  const client = values.get('--for');
  if (client !== undefined && !isHookClient(client)) {
    throw new SluiceError('invalid_params', '--for must be claude or codex');
  }
  if (hook && client !== 'claude') {
    throw new SluiceError(
      'invalid_params',
      '--hook needs --for claude: only Claude Code runs a hook that can wake an idle session',
    );
  }
  const timeout = values.get('--timeout');
  let timeoutS: number | undefined;
  if (timeout !== undefined) {
    if (!/^\d+(\.\d+)?$/.test(timeout) || Number(timeout) > MAX_WAIT_TIMEOUT_S) {
      throw new SluiceError(
        'invalid_params',
        `--timeout must be a number of seconds up to ${MAX_WAIT_TIMEOUT_S}`,
      );
    }
    timeoutS = Number(timeout);
  }
  return {
    as: values.get('--as'),
    home: values.get('--home'),
    db: values.get('--db'),
    client,
    timeoutS,
    hook,
    session: values.get('--session'),
  };
}
