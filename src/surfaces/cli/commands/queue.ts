import type { Command } from 'commander';
import { cutUtf8 } from '../../../core/preview.js';
import { requireQueueAccess } from '../../../host/access.js';
import { listInbox } from '../../../host/inbox.js';
import { pauseQueue, queueSummaryFor, resumeQueue, withdrawMessage } from '../../../host/queue.js';
import { action } from '../context.js';
import { parseLimit, writeOut } from '../io.js';

export function registerQueueCommands(program: Command): void {
  const queue = program.command('queue').description("watch and steer an agent's queue");
  queue
    .command('summary <agent>')
    .description('counts, blocking card and pause state (JSON)')
    .action(
      action(async ({ host, actor }, agentName: string) => {
        const access = await requireQueueAccess(host, await actor(), agentName);
        await writeOut(`${JSON.stringify(await queueSummaryFor(host.store.db, access))}\n`);
      }),
    );
  queue
    .command('ls <agent>')
    .description('pending cards, oldest first, with short previews')
    .option('--limit <n>', 'how many (default 40)')
    .action(
      action(async ({ host, actor }, agentName: string, opts: { limit?: string }) => {
        const access = await requireQueueAccess(host, await actor(), agentName);
        const rows = await listInbox(host, access.agent, {
          limit: parseLimit(opts.limit, '--limit', 10_000, 40),
          withinChannelIds: access.channelIds,
        });
        const lines = rows.map(
          (r) =>
            `${r.entry.position}\t${r.entry.state}\t${r.entry.source}\t${r.projection.message_id}\t${r.projection.author.name}\t${JSON.stringify(cutUtf8(r.projection.body, 80).text)}`,
        );
        await writeOut(lines.length ? `${lines.join('\n')}\n` : 'queue is empty\n');
      }),
    );
  queue
    .command('pause <agent>')
    .description('stop dispatch after the current turn')
    .option('--reason <text>', 'shown to people watching the queue')
    .action(
      action(async ({ host, actor }, agentName: string, opts: { reason?: string }) => {
        await pauseQueue(host, await actor(), agentName, opts.reason);
        await writeOut('paused\n');
      }),
    );
  queue
    .command('resume <agent> [messageId]')
    .description('unpause; or, with a message id, put a returned card back in line (first)')
    .action(
      action(async ({ host, actor }, agentName: string, messageId: string | undefined) => {
        await resumeQueue(host, await actor(), agentName, messageId);
        await writeOut('resumed\n');
      }),
    );
  queue
    .command('withdraw <agent> <messageId>')
    .description('take a pending message back')
    .action(
      action(async ({ host, actor }, agentName: string, messageId: string) => {
        await withdrawMessage(host, await actor(), agentName, messageId);
        await writeOut('withdrawn\n');
      }),
    );
}
