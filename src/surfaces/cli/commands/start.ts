import type { Command } from 'commander';
import { initHome } from '../../../host/identity/index.js';
import { currentLauncher } from '../../hooks/install-files.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';
import { sluiceCommandForHome, sluiceCommandHere } from '../on-path.js';

/** `sluice …` when this installation is on PATH, else its bin/sluice.js (the command that works here). */
function sluiceHere(home: string): { here: string; forHome: string } {
  try {
    const launcher = currentLauncher();
    return { here: sluiceCommandHere(launcher), forHome: sluiceCommandForHome(launcher, home) };
  } catch {
    return { here: 'sluice', forHome: 'sluice' };
  }
}

/** Command lines with their comments aligned after the longest command. */
function steps(rows: readonly [command: string, comment: string][]): string[] {
  const width = Math.max(...rows.map(([command]) => command.length)) + 2;
  return rows.map(([command, comment]) => `  ${command.padEnd(width)}# ${comment}`);
}

/**
 * `sluice start`: initialise the home and show a newcomer the next steps. It starts no host
 * (`sluice serve`, which `npm start` runs, does), so the first step says how to. Commands are
 * spelled as they work here (on-path.ts).
 */
export function registerStartCommand(program: Command): void {
  program
    .command('start')
    .description('initialise the home and print the next steps')
    .action(
      action(async ({ host }) => {
        const { home } = await initHome(host);
        // Another home than the default one is named in every command, so each works as printed.
        const { here, forHome: s } = sluiceHere(home);
        const pathNote =
          here === 'sluice'
            ? []
            : [`(sluice is not on your PATH: the commands name ${here}; README "Put sluice on PATH")`, ''];
        await writeOut(
          [
            `Sluice is ready: home ${home}, embedded SQLite database, person "owner".`,
            '',
            ...pathNote,
            'This started no host. To run one and open the web page:',
            ...steps([
              [`${s} serve`, '(or npm start) serves the page, JSON-RPC and MCP on http://127.0.0.1:7777'],
              ['', 'and prints a login link for owner: open it in a browser'],
              [`${s} login-link`, 'another login link while it runs (each link works once)'],
            ]),
            '',
            'Next steps:',
            ...steps([
              [
                `${s} agent run helper --driver claude --cwd .`,
                'in a project folder: the host runs Claude Code as helper',
              ],
              [`${s} message send helper -m "hello"`, 'a DM from you (owner) to the agent'],
              [
                `${s} agent ls`,
                'the agents and whether they run (a run agent logs to <home>/logs/agent-NAME.log)',
              ],
              [
                `${s} message ls --as helper --json --include-body`,
                'what the agent reads: complete bodies, FIFO',
              ],
              [
                `${s} hooks install claude --as helper`,
                'or: deliver the inbox into your own Claude Code turns',
              ],
            ]),
            '',
          ].join('\n'),
        );
      }),
    );
}
