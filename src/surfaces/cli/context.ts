import type { Command } from 'commander';
import { SluiceError } from '../../core/errors.js';
import type { HostContext } from '../../host/context.js';
import { OWNER_NAME, openHost } from '../../host/home.js';
import { type Principal, resolvePrincipal } from '../../host/principals.js';
import type { Durability } from '../../store/store.js';
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
  /** The acting principal: `--as`, else `$SLUICE_AS`, else the `owner` person. */
  actor(): Promise<Principal>;
  actorName: string;
}

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
      host = await openHost({
        home: global.home,
        db: global.db,
        durability: durabilityOf(global.durability),
      });
      const actorName = global.as ?? (process.env.SLUICE_AS || OWNER_NAME);
      const opened = host;
      await run(
        {
          host: opened,
          global,
          actorName,
          actor: () => resolvePrincipal(opened, actorName),
        },
        ...args,
      );
    } catch (err) {
      process.exitCode = reportError(err);
    } finally {
      await host?.store.close();
    }
  };
}
