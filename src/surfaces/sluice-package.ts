// Where this installation of Sluice lives: the folder of its package.json, found once, upward from
// this module (src/, dist/src/ and the CLI bundle's chunks in dist/cli/ all sit below it). The web
// page, bin/sluice.js for hook commands and the printed version all come from there.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface SluicePackage {
  root: string;
  version: string;
}

let found: SluicePackage | null | undefined;

/** This package's folder and version, or undefined when no package.json named sluice is above. */
export function sluicePackage(): SluicePackage | undefined {
  if (found === undefined) found = findUpward(dirname(fileURLToPath(import.meta.url))) ?? null;
  return found ?? undefined;
}

/** The package's folder; the working directory when it cannot be found (a copied-out module). */
export function packageRoot(): string {
  return sluicePackage()?.root ?? process.cwd();
}

/** The package's version, or 'unknown'. */
export function packageVersion(): string {
  return sluicePackage()?.version ?? 'unknown';
}

function findUpward(start: string): SluicePackage | undefined {
  for (let dir = start; ; ) {
    const pkg = readPackageJson(join(dir, 'package.json'));
    // Named, so a package.json of some other project above an unpacked copy is never taken.
    if (pkg?.name === 'sluice')
      return { root: dir, version: typeof pkg.version === 'string' ? pkg.version : 'unknown' };
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

function readPackageJson(path: string): { name?: unknown; version?: unknown } | undefined {
  try {
    const value: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return value !== null && typeof value === 'object' ? value : undefined;
  } catch {
    return undefined; // missing or unreadable: keep looking upward
  }
}
