import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { basename, join, resolve } from 'node:path';
import type { BenchResult } from './result.js';

// Every bench/<name>.ts exports `bench<Name>()`; the runner finds them in the built folder, runs
// them one after another (side by side measurements live inside each module) and writes a report.
// `run.js jetstream channels` runs only those modules and replaces only their rows in the report
// (rows of the same name, in place; the rest of the file stays); `--print` writes nothing.
const here = import.meta.dirname;
const args = process.argv.slice(2);
const printOnly = args.includes('--print');
const only = args.filter((a) => !a.startsWith('--'));

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
  const row = (r: BenchResult) =>
    `| ${r.name} | ${r.ratio.toFixed(3)} | ${r.target} | ${r.ok ? 'yes' : '**no**'} | ${r.detail.replace(/\|/g, '\\|')} |`;
  const target = resolve(here, '../../bench/results.md');
  if (printOnly) return;
  if (only.length > 0 && existsSync(target)) {
    writeFileSync(
      target,
      replaceRows(
        readFileSync(target, 'utf8'),
        rows.map((r) => [r.name, row(r)]),
      ),
    );
  } else {
    const lines = [
      '# Benchmark results',
      '',
      `Machine: ${machine()}. Run: ${new Date().toISOString()}. Each ratio is measured side by side in one run.`,
      '',
      '| benchmark | ratio | target | meets | detail |',
      '| --- | --- | --- | --- | --- |',
      ...rows.map(row),
      '',
    ];
    writeFileSync(target, lines.join('\n') + keptSections(target));
  }
  process.stdout.write(`\nwrote ${target}\n`);
}

/**
 * The report with each named row replaced where a row of that name is (the first table's rows
 * start with `| name |`), and new rows appended after the first table's last row.
 */
function replaceRows(report: string, rows: [name: string, line: string][]): string {
  const lines = report.split('\n');
  const firstTable = lines.findIndex((l) => l.startsWith('| benchmark |'));
  let end = firstTable;
  while (end + 1 < lines.length && lines[end + 1]?.startsWith('|')) end++;
  for (const [name, line] of rows) {
    const at = lines.findIndex((l) => l.startsWith(`| ${name} |`));
    if (at >= 0) lines[at] = line;
    else if (firstTable >= 0) lines.splice(++end, 0, line);
  }
  return lines.join('\n');
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
