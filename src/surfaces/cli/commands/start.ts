import type { Command } from 'commander';
import { initHome } from '../../../host/home.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';

/** `npm start`: initialise the home and show a newcomer the next steps. */
export function registerStartCommand(program: Command): void {
  program
    .command('start')
    .description('initialise the home and print the next steps')
    .action(
      action(async ({ host }) => {
        const { home } = await initHome(host);
        await writeOut(
          [
            `Sluice is ready: home ${home}, embedded SQLite database, person "owner".`,
            '',
            'Next steps (npx sluice … or ./bin/sluice.js …):',
            '  sluice agent add helper                      # an agent with an inbox',
            '  sluice message send helper -m "hello"        # a DM from you (owner) to the agent',
            '  sluice message ls --as helper --json --include-body   # the agent reads complete bodies, FIFO',
            '  sluice delivery --as helper                  # the bounded envelope a harness injects',
            '  sluice message reply <id> --as helper -m "hi" && sluice message archive <id> --as helper',
            '  sluice hooks install claude --as helper      # deliver the inbox into Claude Code turns',
            '',
          ].join('\n'),
        );
      }),
    );
}
