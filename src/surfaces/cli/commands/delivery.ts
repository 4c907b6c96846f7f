import type { Command } from 'commander';
import { CLAUDE_ADDITIONAL_CONTEXT_LIMIT, type DeliveryLimits } from '../../../core/envelope.js';
import { SluiceError } from '../../../core/errors.js';
import { defaultPageBytes, shellOutputCap } from '../../../core/output-cap.js';
import { deliveryFor, metadataNoticeFor } from '../../../host/queue/index.js';
import { action } from '../context.js';
import { parseLimit, writeOut } from '../io.js';

export function registerDeliveryCommands(program: Command): void {
  program
    .command('delivery')
    .description('render your pending messages as a bounded delivery envelope (read-only)')
    .option('--for <client>', 'claude or codex: apply that adapter’s cap')
    .option('--metadata', 'the short metadata notification instead of bodies')
    .option('--max-messages <n>', 'count cap (default 16)')
    .option('--max-bytes <n>', 'UTF-8 byte cap of the whole text (default 16384)')
    .action(
      action(
        async (
          { host, actor },
          opts: { for?: string; metadata?: boolean; maxMessages?: string; maxBytes?: string },
        ) => {
          const me = await actor();
          if (opts.for !== undefined && opts.for !== 'claude' && opts.for !== 'codex') {
            throw new SluiceError('invalid_params', '--for must be claude or codex');
          }
          if (opts.metadata) {
            const notice = await metadataNoticeFor(host, me);
            if (notice !== '') await writeOut(`${notice}\n`);
            return;
          }
          const limits: Partial<DeliveryLimits> = {
            maxMessages: parseLimit(opts.maxMessages, '--max-messages', 1000, 16),
            maxBytes: parseLimit(opts.maxBytes, '--max-bytes', 1_000_000, 16_384),
          };
          if (opts.for === 'claude') limits.maxUnits = CLAUDE_ADDITIONAL_CONTEXT_LIMIT;
          // The listing page in that client's shell: an oldest message within it is fetched with it.
          if (opts.for !== undefined) limits.pageBytes = defaultPageBytes(shellOutputCap(opts.for));
          const rendered = await deliveryFor(host, me, { limits });
          if (rendered.text !== '') await writeOut(`${rendered.text}\n`);
        },
      ),
    );
}
