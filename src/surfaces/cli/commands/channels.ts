import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import { createChannel, listChannels, resolveTarget } from '../../../host/channels.js';
import { displayChannel } from '../../../host/inbox.js';
import { loadProjections } from '../../../host/messages.js';
import { listChannelHistory } from '../../../store/ops/messages.js';
import { action } from '../context.js';
import { parseLimit, writeOut } from '../io.js';

export function registerChannelCommands(program: Command): void {
  const channel = program.command('channel').description('channels and their history');
  channel
    .command('create <name>')
    .description('create a group channel; you are a member too')
    .requiredOption('--members <names>', 'comma-separated principal names')
    .action(
      action(async ({ host, actor }, name: string, opts: { members: string }) => {
        const members = opts.members
          .split(',')
          .map((m) => m.trim())
          .filter((m) => m !== '');
        if (members.length === 0)
          throw new SluiceError('invalid_params', '--members needs at least one name');
        const row = await createChannel(host, await actor(), { name, members });
        await writeOut(`#${row.name}\n`);
      }),
    );

  channel
    .command('ls')
    .description('list your channels')
    .option('--json', 'print JSON')
    .action(
      action(async ({ host, actor }, opts: { json?: boolean }) => {
        const rows = await listChannels(host, await actor());
        if (opts.json) {
          await writeOut(`${JSON.stringify(rows.map((c) => ({ ...c, name: displayChannel(c.name) })))}\n`);
          return;
        }
        const lines = rows.map(
          (c) => `${displayChannel(c.name)}\t${c.kind}\t${c.members.map((m) => m.name).join(',')}`,
        );
        await writeOut(lines.length ? `${lines.join('\n')}\n` : 'no channels\n');
      }),
    );

  channel
    .command('history <target>')
    .description('recent messages of #channel or of your DM with a principal, oldest first')
    .option('--json', 'print JSON projections')
    .option('--limit <n>', 'how many (default 20)')
    .action(
      action(async ({ host, actor }, target: string, opts: { json?: boolean; limit?: string }) => {
        const limit = parseLimit(opts.limit, '--limit', 1000, 20);
        const me = await actor();
        const ch = await resolveTarget(host, me, target);
        const rows = (await listChannelHistory(host.store.db, ch.id, { limit })).reverse();
        const projections = await loadProjections(host.store.db, rows);
        if (opts.json) {
          await writeOut(`${JSON.stringify(projections)}\n`);
          return;
        }
        const lines = projections.map((p) => `${p.created_at} ${p.author.name} [${p.message_id}]: ${p.body}`);
        await writeOut(lines.length ? `${lines.join('\n')}\n` : 'no messages\n');
      }),
    );
}
