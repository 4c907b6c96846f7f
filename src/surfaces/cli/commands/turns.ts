import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import { requireAgent } from '../../../host/inbox.js';
import { beginTurn, endTurn } from '../../../host/turns/index.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';

export function registerTurnCommands(program: Command): void {
  const turn = program.command('turn').description('open and settle model turns (for harnesses)');
  turn
    .command('begin')
    .description('open a turn for --as AGENT; prints the turn id')
    .option('--session <key>', 'the harness session this turn belongs to')
    .action(
      action(async ({ host, actor }, opts: { session?: string }) => {
        const agent = await actor();
        requireAgent(agent);
        const t = await beginTurn(host, agent, { sessionKey: opts.session });
        await writeOut(`${t.id}\n`);
      }),
    );
  turn
    .command('end <id>')
    .description('settle a turn: --ok, or --failed KIND')
    .option('--ok', 'the turn succeeded')
    .option('--failed <kind>', 'the turn failed with this kind (e.g. model_error)')
    .option('--reason <text>', 'why it failed')
    .option('--json', 'print the settlement as JSON')
    .action(
      action(
        async (
          { host, actor },
          id: string,
          opts: { ok?: boolean; failed?: string; reason?: string; json?: boolean },
        ) => {
          if ((opts.ok === true) === (opts.failed !== undefined)) {
            throw new SluiceError('invalid_params', 'say exactly one of --ok or --failed KIND');
          }
          const agent = await actor();
          const settled = await endTurn(
            host,
            agent,
            id,
            opts.ok ? { ok: true } : { ok: false, kind: opts.failed as string, reason: opts.reason },
          );
          if (opts.json) {
            await writeOut(`${JSON.stringify(settled)}\n`);
            return;
          }
          await writeOut(
            `${settled.turnId} ${settled.state}: ${settled.handled.length} handled, ${settled.returned.length} returned\n`,
          );
        },
      ),
    );
}
