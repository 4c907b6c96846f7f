import type { Command } from 'commander';
import { type RecipientStatus, readMessageStatus } from '../../../host/messages/index.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';
import { renderTable, writeList } from '../list-output.js';

const COLUMNS = [
  { header: 'AGENT', cell: (r: RecipientStatus) => r.agent },
  { header: 'STATE', cell: (r: RecipientStatus) => r.state },
  { header: 'SINCE', cell: (r: RecipientStatus) => r.since },
  { header: 'REASON', cell: (r: RecipientStatus) => r.reason ?? '' },
] as const;

/** `sluice message status ID [--json]`: one row per recipient agent, in the style of every list. */
export function registerMessageStatus(message: Command): void {
  message
    .command('status <id>')
    .description('where a message stands with each agent it was sent to')
    .option('--json', 'print [{agent, state, since, reason, replyId?}]')
    .action(
      action(async ({ host, actor }, id: string, opts: { json?: boolean }) => {
        const status = await readMessageStatus(host, await actor(), id);
        const more = status.recipientCount - status.recipients.length;
        if (opts.json || status.recipients.length === 0) {
          await writeList(status.recipients, {
            json: opts.json,
            columns: COLUMNS,
            empty: 'no recipient agents',
          });
          return;
        }
        const tail = more > 0 ? `\n+${more} more` : '';
        await writeOut(`${renderTable(COLUMNS, status.recipients)}${tail}\n`);
      }),
    );
}
