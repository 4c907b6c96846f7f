import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import { initHome } from '../../../host/home.js';
import { addPrincipal } from '../../../host/principals.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';

export function registerSetupCommands(program: Command): void {
  program
    .command('init')
    .description('create the home, database, cursor secret and the owner person (idempotent)')
    .action(
      action(async ({ host }) => {
        const { home, owner } = await initHome(host);
        await writeOut(`sluice home ready at ${home} (person: ${owner}, database: ${host.store.dialect})\n`);
      }),
    );

  const agent = program.command('agent').description('manage agents');
  agent
    .command('add <name>')
    .description('add an agent (it gets an inbox)')
    .option('--settlement <mode>', 'explicit (archive ids) or turn (settled by turns)', 'explicit')
    .action(
      action(async ({ host }, name: string, opts: { settlement: string }) => {
        if (opts.settlement !== 'explicit' && opts.settlement !== 'turn') {
          throw new SluiceError('invalid_params', '--settlement must be explicit or turn');
        }
        const row = await addPrincipal(host, { name, kind: 'agent', settlement: opts.settlement });
        await writeOut(`${row.name}\n`);
      }),
    );

  const person = program.command('person').description('manage people');
  person
    .command('add <name>')
    .description('add a person')
    .action(
      action(async ({ host }, name: string) => {
        const row = await addPrincipal(host, { name, kind: 'person' });
        await writeOut(`${row.name}\n`);
      }),
    );
}
