import type { Command } from 'commander';
import { initHome } from '../../../host/home.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';

/**
 * `sluice start`: initialise the home and show a newcomer the next steps. It starts no host
 * (`sluice serve`, which `npm start` runs, does), so the first step says how to.
 */
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
            'This started no host. To run one and open the web page:',
            '  sluice serve          # (or npm start) serves the page, JSON-RPC and MCP on http://127.0.0.1:7777',
            '                        # and prints a login link for owner: open it in a browser',
            '  sluice login-link     # another login link while it runs (each link works once)',
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
