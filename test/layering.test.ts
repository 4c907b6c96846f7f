import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/host.js';

const LAYERS = ['core', 'store', 'host', 'surfaces'] as const;
type Layer = (typeof LAYERS)[number];

/** Which layers each layer may import (DESIGN.md §7: core ← store ← host ← surfaces). */
const ALLOWED: Record<Layer, readonly Layer[]> = {
  core: ['core'],
  store: ['store', 'core'],
  host: ['host', 'store', 'core'],
  surfaces: ['surfaces', 'host', 'store', 'core'],
};

const NODE_IO =
  /^(node:)?(fs|fs\/promises|net|http|https|child_process|os|path|process|dgram|tls|worker_threads)$/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [
    ...text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g),
  ];
  return specs.map((m) => (m[1] ?? m[2]) as string);
}

function layerOf(path: string): Layer | undefined {
  const rel = relative(join(REPO_ROOT, 'src'), path).split(/[/\\]/)[0];
  return LAYERS.find((l) => l === rel);
}

describe('layering', () => {
  const files = sourceFiles(join(REPO_ROOT, 'src'));

  it('finds source files in every layer', () => {
    for (const layer of LAYERS) expect(files.some((f) => layerOf(f) === layer)).toBe(true);
  });

  it.each(files.map((f) => [relative(REPO_ROOT, f), f]))(
    '%s imports only from the layers below it',
    (_name, file) => {
      const from = layerOf(file);
      if (!from) return;
      for (const spec of importsOf(file)) {
        if (!spec.startsWith('.')) continue;
        const target = layerOf(resolve(file, '..', spec));
        if (!target) continue;
        expect(ALLOWED[from], `${relative(REPO_ROOT, file)} imports ${spec}`).toContain(target);
      }
    },
  );

  it('keeps core pure: no file system, network, process or clock imports', () => {
    for (const file of files.filter((f) => layerOf(f) === 'core')) {
      for (const spec of importsOf(file)) {
        expect(NODE_IO.test(spec), `${relative(REPO_ROOT, file)} imports ${spec}`).toBe(false);
      }
      const text = readFileSync(file, 'utf8');
      expect(
        /Date\.now\(|new Date\(|Math\.random\(|process\./.test(text),
        `${relative(REPO_ROOT, file)} reads the clock, randomness or process`,
      ).toBe(false);
    }
  });

  it('detects a violation when one is planted', () => {
    // Guards the checker itself: a store file importing the host must be flagged.
    const fake = join(REPO_ROOT, 'src/store/fake.ts');
    const target = layerOf(resolve(fake, '..', '../host/context.js'));
    expect(ALLOWED.store).not.toContain(target);
  });
});
