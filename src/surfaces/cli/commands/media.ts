import type { Command } from 'commander';
import { collectMediaGarbage, parseAge } from '../../../host/media/index.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** `sluice media gc [--older-than 30d] [--dry-run] [--json]`. */
export function registerMediaCommands(program: Command): void {
  const media = program.command('media').description('attachment storage');
  media
    .command('gc')
    .description('remove blobs no message references and stale materialised copies; report what was freed')
    .option(
      '--older-than <age>',
      'keep unreferenced uploads and copies younger than this (30d, 12h, 90m)',
      '30d',
    )
    .option('--dry-run', 'report what would be freed, change nothing')
    .option('--json', 'print the report as JSON')
    .action(
      action(async ({ host }, opts: { olderThan: string; dryRun?: boolean; json?: boolean }) => {
        const report = await collectMediaGarbage(host, {
          olderThanMs: parseAge(opts.olderThan),
          dryRun: opts.dryRun,
        });
        if (opts.json) {
          await writeOut(`${JSON.stringify(report)}\n`);
          return;
        }
        const verb = report.dryRun ? 'would free' : 'freed';
        await writeOut(
          `media gc ${verb} ${report.blobs.count} blob(s), ${formatBytes(report.blobs.bytes)}; ${report.materialized.count} materialised cop${report.materialized.count === 1 ? 'y' : 'ies'}, ${formatBytes(report.materialized.bytes)}\n`,
        );
      }),
    );
}
