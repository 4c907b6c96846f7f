import { SluiceError } from '../../core/errors.js';
import { quoteInput } from '../../core/text.js';
import { type HookClient, type HookEventArg, isHookClient, isHookEventArg } from './adapters.js';

/** `sluice hook <client> <event> [--as NAME] [--home DIR] [--db URL] [--metadata]`. */
export interface HookArgs {
  client: HookClient;
  event: HookEventArg;
  as: string | undefined;
  home: string | undefined;
  db: string | undefined;
  /** Deliver the short metadata notification instead of bodies. */
  metadata: boolean;
}

export const HOOK_USAGE =
  'usage: sluice hook claude|codex session-start|user-prompt-submit [--as AGENT] [--home DIR] [--db URL] [--metadata]';

const VALUE_OPTIONS = new Set(['--as', '--home', '--db']);

/**
 * Parses the hook command line by hand: commander would add tens of milliseconds to a path that
 * runs before every prompt. Accepts `--opt value` and `--opt=value`.
 */
export function parseHookArgs(argv: readonly string[]): HookArgs {
  const positional: string[] = [];
  const values = new Map<string, string>();
  let metadata = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--metadata') {
      metadata = true;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (VALUE_OPTIONS.has(name)) {
      const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined || value === '')
        throw new SluiceError('invalid_params', `${name} needs a value`);
      values.set(name, value);
      continue;
    }
    if (arg.startsWith('-'))
      throw new SluiceError('invalid_params', `unknown option ${quoteInput(arg, 40)}; ${HOOK_USAGE}`);
    positional.push(arg);
  }
  const [client, event, extra] = positional;
  if (!isHookClient(client) || !isHookEventArg(event) || extra !== undefined) {
    throw new SluiceError('invalid_params', HOOK_USAGE);
  }
  return {
    client,
    event,
    as: values.get('--as'),
    home: values.get('--home'),
    db: values.get('--db'),
    metadata,
  };
}
