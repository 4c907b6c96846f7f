import { accessSync, constants, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';
import { shellWord } from '../../core/shell-word.js';
import type { SluiceLauncher } from '../hooks/install-files.js';

/** The first executable `name` on `PATH` (as a shell would find it), or undefined. */
export function findOnPath(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '' || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function realpathOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * What `hooks install` tells the user about paths: the installed commands name this Node and this
 * clone's bin/sluice.js, so moving the clone needs a reinstall; and the delivered instructions tell
 * the model to run `sluice message …`, which needs `sluice` on PATH (README: "Put sluice on PATH").
 */
export function launcherNotes(
  launcher: SluiceLauncher,
  client: 'claude' | 'codex',
  agent: string,
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  const notes = [
    `paths: the hooks and MCP server run ${launcher.node} ${launcher.bin}; if you move this folder or that Node, run sluice hooks install ${client} --as ${agent} again from the new place (it replaces them)`,
  ];
  const onPath = findOnPath('sluice', env);
  if (onPath === undefined) {
    notes.push(
      `PATH: no sluice on your PATH, but the model is told to run sluice message …: put it there (README "Put sluice on PATH"), e.g. ln -s ${launcher.bin} ~/.local/bin/sluice`,
    );
  } else if (realpathOrSelf(onPath) !== realpathOrSelf(launcher.bin)) {
    notes.push(
      `PATH: sluice on your PATH is ${onPath}, not this installation (${launcher.bin}): the model's sluice message … runs that one`,
    );
  }
  return notes;
}

/**
 * How a person runs this installation from a shell here: `sluice` when the `sluice` on PATH is
 * this installation, else the absolute path of its bin/sluice.js (executable, with a `node`
 * shebang). Banners and the page print commands with it, so each one works as printed.
 */
export function sluiceCommandHere(launcher: SluiceLauncher, env: NodeJS.ProcessEnv = process.env): string {
  const onPath = findOnPath('sluice', env);
  if (onPath !== undefined && realpathOrSelf(onPath) === realpathOrSelf(launcher.bin)) return 'sluice';
  return shellWord(launcher.bin);
}

/**
 * {@link sluiceCommandHere} for a home: with `--home DIR` unless it is the default `~/.sluice` a
 * new shell would use anyway.
 */
export function sluiceCommandForHome(
  launcher: SluiceLauncher,
  home: string,
  options: { env?: NodeJS.ProcessEnv; defaultHome?: string } = {},
): string {
  const here = sluiceCommandHere(launcher, options.env);
  return home === (options.defaultHome ?? join(homedir(), '.sluice'))
    ? here
    : `${here} --home ${shellWord(home)}`;
}
