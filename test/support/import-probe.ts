// Which modules a Node process loads: a resolve hook (registered with --import) appends every
// resolved URL to a log. The hook and CLI start-up tests use it to keep their import graphs lean.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface ProbeRun {
  /** Every module URL resolved, first occurrence order. */
  urls: string[];
  /** The npm packages among them, sorted. */
  packages: string[];
  stdout: string;
  stderr: string;
  status: number | null;
}

export interface ImportProbe {
  /** A folder of the probe's own, for helper scripts a test wants next to the hook. */
  dir: string;
  /** Runs `node --import <hook> ...nodeArgs` and reports what it loaded. */
  run(nodeArgs: readonly string[], options: { env: NodeJS.ProcessEnv; input?: string }): ProbeRun;
  dispose(): void;
}

export function createImportProbe(prefix: string): ImportProbe {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(
    join(dir, 'log-resolve.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(process.env.SLUICE_IMPORT_LOG, result.url + '\\n');
  return result;
}\n`,
  );
  const register = join(dir, 'register.mjs');
  writeFileSync(
    register,
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'log-resolve.mjs')).href)});\n`,
  );
  let runs = 0;
  return {
    dir,
    run(nodeArgs, options) {
      const log = join(dir, `log-${runs++}.txt`);
      writeFileSync(log, '');
      const child = spawnSync(process.execPath, ['--import', register, ...nodeArgs], {
        env: { ...options.env, SLUICE_IMPORT_LOG: log },
        input: options.input,
        encoding: 'utf8',
      });
      const urls = [...new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean))];
      const packages = [
        ...new Set(urls.flatMap((u) => /node_modules\/((@[^/]+\/)?[^/]+)/.exec(u)?.[1] ?? [])),
      ].sort();
      return { urls, packages, stdout: child.stdout, stderr: child.stderr, status: child.status };
    },
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
