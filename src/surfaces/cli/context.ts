import type { Command } from 'commander';
import { SluiceError } from '../../core/errors.js';
import { shellWord } from '../../core/shell-word.js';
import { quoteInput } from '../../core/text.js';
import type { HostContext } from '../../host/identity/index.js';
import {
  assertHomeExists,
  ensureDatabaseFolder,
  OWNER_NAME,
  openHost,
  type Principal,
  resolvePrincipal,
} from '../../host/identity/index.js';
import type { Durability } from '../../store/store.js';
import { type AgentLock, agentLockFrom, enforceAgentLock } from './agent-lock.js';
import { logErrorsInHome } from './internal-error.js';
import { reportError } from './io.js';

export interface GlobalOptions {
  home?: string;
  db?: string;
  as?: string;
  durability?: string;
}

export interface CommandContext {
  host: HostContext;
  global: GlobalOptions;
  /** The global options as typed on this command line (repeated by commands that print the next command). */
  typed: GlobalOptions;
  /** The acting principal: `--as`, else `$SLUICE_AS`, else the `owner` person. */
  actor(): Promise<Principal>;
  actorName: string;
  /** The agent lock this process runs under (the model's shell), or undefined for a person's CLI. */
  lock: AgentLock | undefined;
}

/** `message send` for the `send` subcommand of `message`: the words a user typed, root excluded. */
function commandPath(command: Command): string {
  const words: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) words.unshift(c.name());
  return words.join(' ');
}

/** The commands that create a home (and its database) when there is none; the rest need one. */
const CREATES_HOME = new Set(['init', 'start', 'serve']);

function durabilityOf(value: string | undefined): Durability {
  if (value === undefined || value === 'full') return 'full';
  if (value === 'normal') return 'normal';
  throw new SluiceError('invalid_params', `--durability must be full or normal, not ${value}`);
}

/**
 * The actor named by `--as` or `$SLUICE_AS`; an unknown name says which of them named it (the
 * owner default and an agent lock's name are left as the host says them).
 */
async function resolveActor(host: HostContext, name: string, source: string | undefined): Promise<Principal> {
  try {
    return await resolvePrincipal(host, name);
  } catch (err) {
    if (source === undefined || !(err instanceof SluiceError) || err.code !== 'not_found') throw err;
    const suggestions = Array.isArray(err.data?.suggestions) ? (err.data.suggestions as string[]) : [];
    const next =
      suggestions.length > 0
        ? `did you mean ${suggestions.join(' or ')}?`
        : 'sluice agent ls and sluice person ls list them';
    throw new SluiceError(
      'not_found',
      `no principal named ${quoteInput(name)} (named by ${source}; ${next})`,
      err.data,
    );
  }
}

/** The argument names under which a command takes a channel: `<channel>`, or a send's `<target>`. */
const CHANNEL_ARGUMENTS = new Set(['channel', 'target']);

/** `#name` or a channel id: what `channel add` takes (a principal's name is a DM, which no one joins). */
const CHANNEL_REF = /^(#|c_)\S+$/;

/**
 * The channel the command line named, as typed: the value of the command's `<channel>` or
 * `<target>` argument when it is a channel reference; undefined when the command names none (a
 * message id names a channel the caller may not know, so it is never guessed).
 */
function typedChannel(command: Command, args: readonly unknown[]): string | undefined {
  const index = command.registeredArguments.findIndex((a) => CHANNEL_ARGUMENTS.has(a.name()));
  const value = index < 0 ? undefined : args[index];
  return typeof value === 'string' && CHANNEL_REF.test(value) ? value : undefined;
}

/**
 * `not_member` with the next step when the command named the channel: a member adds the caller
 * (an agent joins when that member manages it, a person is invited and then runs `sluice channel
 * accept`). The channel is quoted for a shell (a bare `#ops` would start a comment).
 */
function withNextStep(err: unknown, actorName: string | undefined, channel: string | undefined): unknown {
  if (!(err instanceof SluiceError) || err.code !== 'not_member') return err;
  if (actorName === undefined || channel === undefined) return err;
  return new SluiceError(
    'not_member',
    `${err.message}; ask a member to run \`sluice channel add ${shellWord(channel)} ${shellWord(actorName)}\``,
    err.data,
  );
}

/**
 * Wraps a command action: opens the host, runs, closes the store, and turns errors into one
 * line and an exit code.
 */
export function action<A extends unknown[]>(
  run: (ctx: CommandContext, ...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const command = args[args.length - 1] as Command;
    const global = command.optsWithGlobals() as GlobalOptions;
    let host: HostContext | undefined;
    let actorName: string | undefined;
    try {
      // Under an agent lock, identity and store come from the lock alone; overrides are refused
      // before anything is opened (DESIGN.md §8 I8).
      const lock = agentLockFrom();
      const locked = lock ? enforceAgentLock(lock, { command: commandPath(command), ...global }) : undefined;
      const where = { home: locked ? locked.home : global.home, db: locked ? locked.db : global.db };
      logErrorsInHome(where.home);
      if (CREATES_HOME.has(commandPath(command))) ensureDatabaseFolder(where);
      else assertHomeExists(where);
      host = await openHost({
        ...where,
        durability: durabilityOf(global.durability),
      });
      logErrorsInHome(host.home);
      const name = locked ? locked.as : (global.as ?? (process.env.SLUICE_AS || OWNER_NAME));
      const source = locked
        ? undefined
        : global.as !== undefined
          ? '--as'
          : process.env.SLUICE_AS
            ? 'SLUICE_AS'
            : undefined;
      actorName = name;
      const opened = host;
      // A name given explicitly is checked before any command runs, even one that acts as the
      // home's owner (admin commands): a typo must not pass silently (docs/cli.md).
      if (source !== undefined && !CREATES_HOME.has(commandPath(command))) {
        await resolveActor(opened, name, source);
      }
      await run(
        {
          host: opened,
          global: locked ? { ...global, as: locked.as, home: locked.home, db: locked.db } : global,
          typed: global,
          actorName: name,
          actor: () => resolveActor(opened, name, source),
          lock,
        },
        ...args,
      );
    } catch (err) {
      process.exitCode = reportError(
        withNextStep(err, actorName, typedChannel(command, args)),
        host?.home ?? global.home,
      );
    } finally {
      await host?.store.close();
    }
  };
}
