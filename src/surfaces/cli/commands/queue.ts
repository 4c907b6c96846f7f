import type { Command } from 'commander';
import { cutUtf8 } from '../../../core/preview.js';
import { requireQueueAccess } from '../../../host/identity/index.js';
import {
  listInbox,
  pauseQueue,
  readQueueSummary,
  resumeQueue,
  withdrawMessage,
} from '../../../host/queue/index.js';
import { action } from '../context.js';
import { parseLimit, writeOut } from '../io.js';
import { writeList } from '../list-output.js';

/**
 * What an empty listing says: never "empty" while cards wait that this reader may not see (the
 * owner and an agent's managers see its counts, but cards only from channels they share with it).
 */
async function emptyQueueLine(
  host: Parameters<typeof readQueueSummary>[0],
  access: Parameters<typeof readQueueSummary>[1],
): Promise<string> {
  const { total } = await readQueueSummary(host, access);
  if (total === 0) return 'queue is empty';
  return `no cards you can see: ${total} waiting in conversations you are not in (message ${access.agent.name} to share one)`;
}

export function registerQueueCommands(program: Command): void {
  const queue = program.command('queue').description("watch and steer an agent's queue");
  queue
    .command('summary <agent>')
    .description('counts, blocking card and pause state (JSON)')
    .action(
      action(async ({ host, actor }, agentName: string) => {
        const access = await requireQueueAccess(host, await actor(), agentName);
        await writeOut(`${JSON.stringify(await readQueueSummary(host, access))}\n`);
      }),
    );
  queue
    .command('ls <agent>')
    .description('pending cards, oldest first, with short previews')
    .option('--limit <n>', 'how many (default 40)')
    .option('--json', 'print [{place, position, state, source, id, from, preview}]')
    .action(
      action(async ({ host, actor }, agentName: string, opts: { limit?: string; json?: boolean }) => {
        const access = await requireQueueAccess(host, await actor(), agentName);
        const rows = await listInbox(host, access.agent, {
          limit: parseLimit(opts.limit, '--limit', 10_000, 40),
          withinChannelIds: access.channelIds,
        });
        // `place` is the card's place in line among those listed (1 is next); `position` is the
        // stored FIFO counter, which only grows, so it says nothing of how many wait before it.
        const cards = rows.map((r, i) => ({
          place: i + 1,
          position: r.entry.position,
          state: r.entry.state,
          source: r.entry.source,
          id: r.projection.message_id,
          from: r.projection.author.name,
          preview: cutUtf8(r.projection.body, 80).text,
        }));
        await writeList(cards, {
          json: opts.json,
          empty: cards.length === 0 ? await emptyQueueLine(host, access) : '',
          columns: [
            { header: 'PLACE', cell: (c) => String(c.place) },
            { header: 'STATE', cell: (c) => c.state },
            { header: 'SOURCE', cell: (c) => c.source },
            { header: 'ID', cell: (c) => c.id },
            { header: 'FROM', cell: (c) => c.from },
            { header: 'PREVIEW', cell: (c) => JSON.stringify(c.preview) },
          ],
        });
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
