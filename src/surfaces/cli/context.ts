import type { Command } from 'commander';
import { SluiceError } from '../../core/errors.js';
import type { HostContext } from '../../host/context.js';
import { assertHomeExists, OWNER_NAME, openHost } from '../../host/home.js';
import { type Principal, resolvePrincipal } from '../../host/principals.js';
import type { Durability } from '../../store/store.js';
import { type AgentLock, agentLockFrom, enforceAgentLock } from './agent-lock.js';
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
    try {
      // Under an agent lock, identity and store come from the lock alone; overrides are refused
      // before anything is opened (DESIGN.md §8 I8).
      const lock = agentLockFrom();
      const locked = lock ? enforceAgentLock(lock, { command: commandPath(command), ...global }) : undefined;
      const where = { home: locked ? locked.home : global.home, db: locked ? locked.db : global.db };
      if (!CREATES_HOME.has(commandPath(command))) assertHomeExists(where);
      host = await openHost({
        ...where,
        durability: durabilityOf(global.durability),
      });
      const actorName = locked ? locked.as : (global.as ?? (process.env.SLUICE_AS || OWNER_NAME));
      const opened = host;
      await run(
        {
          host: opened,
          global: locked ? { ...global, as: locked.as, home: locked.home, db: locked.db } : global,
          typed: global,
          actorName,
          actor: () => resolvePrincipal(opened, actorName),
          lock,
        },
        ...args,
      );
    } catch (err) {
      process.exitCode = reportError(err, host?.home ?? global.home);
    } finally {
      await host?.store.close();
    }
  };
}
