import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { basename, join, resolve } from 'node:path';
import type { BenchResult } from './result.js';

// Every bench/<name>.ts exports `bench<Name>()`; the runner finds them in the built folder, runs
// them one after another (side by side measurements live inside each module) and writes a report.
const here = import.meta.dirname;
const only = process.argv.slice(2);

function machine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown cpu';
  return `${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}`;
}

async function main(): Promise<void> {
  const modules = readdirSync(here)
    .filter((f) => f.endsWith('.js') && !['run.js', 'result.js'].includes(f) && !f.startsWith('eval'))
    .filter((f) => only.length === 0 || only.includes(basename(f, '.js')));
  const rows: (BenchResult & { module: string })[] = [];
  for (const file of modules) {
    const mod = (await import(join(here, file))) as Record<string, unknown>;
    for (const [name, fn] of Object.entries(mod)) {
      if (!name.startsWith('bench') || typeof fn !== 'function') continue;
      process.stdout.write(`running ${name} …\n`);
      try {
        for (const r of (await fn()) as BenchResult[]) {
          rows.push({ ...r, module: file });
          process.stdout.write(
            `  ${r.ok ? 'ok  ' : 'MISS'} ${r.name}: ${r.ratio.toFixed(3)} (target ${r.target}) — ${r.detail}\n`,
          );
        }
      } catch (err) {
        process.stdout.write(`  FAIL ${name}: ${(err as Error).message}\n`);
        rows.push({
          module: file,
          name,
          ratio: Number.NaN,
          target: '-',
          ok: false,
          detail: `failed: ${(err as Error).message}`,
        });
      }
    }
  }
  const lines = [
    '# Benchmark results',
    '',
    `Machine: ${machine()}. Run: ${new Date().toISOString()}. Each ratio is measured side by side in one run.`,
    '',
    '| benchmark | ratio | target | meets | detail |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.ratio.toFixed(3)} | ${r.target} | ${r.ok ? 'yes' : '**no**'} | ${r.detail.replace(/\|/g, '\\|')} |`,
    ),
    '',
  ];
  const target = resolve(here, '../../bench/results.md');
  writeFileSync(target, lines.join('\n') + keptSections(target));
  process.stdout.write(`\nwrote ${target}\n`);
}

/**
 * Sections other runs write into the report between `<!-- NAME:begin … -->` and `<!-- NAME:end -->`
 * (the drain rows come from `npm run eval`, with the real clients): kept as they are.
 */
function keptSections(path: string): string {
  if (!existsSync(path)) return '';
  const sections = readFileSync(path, 'utf8').match(/<!-- (\w+):begin[^>]*-->[\s\S]*?<!-- \1:end -->/g) ?? [];
  return sections.map((s) => `\n${s}\n`).join('');
}

await main();
