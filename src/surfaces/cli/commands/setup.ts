import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import {
  type AgentRunView,
  addAgentManager,
  agentManagers,
  agentRunsByName,
  managerOnAdd,
  removeAgentManager,
  runStateLabel,
} from '../../../host/agents/index.js';
import {
  addPrincipal,
  initHome,
  listPrincipalsByName,
  OWNER_NAME,
  type Principal,
  setSettlementMode,
} from '../../../host/identity/index.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';
import { writeList } from '../list-output.js';

/** The RUN cell of `agent ls`: `-` for an agent the host does not run. */
function runCell(view: AgentRunView | undefined): string {
  if (view === undefined) return '-';
  const label = runStateLabel(view);
  return `${view.driver}: ${label.length > 120 ? `${label.slice(0, 119)}…` : label}`;
}

const principalJson = (p: Principal) => ({
  name: p.name,
  kind: p.kind,
  ...(p.kind === 'agent' ? { settlement: p.settlement } : {}),
  createdAt: p.created_at,
});

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
    .description('add an agent (it gets an inbox); a person other than the owner who adds it manages it')
    .option('--settlement <mode>', 'explicit (archive ids) or turn (settled by turns)', 'explicit')
    .action(
      action(async ({ host, actor, actorName }, name: string, opts: { settlement: string }) => {
        if (opts.settlement !== 'explicit' && opts.settlement !== 'turn') {
          throw new SluiceError('invalid_params', '--settlement must be explicit or turn');
        }
        // The owner (the default actor) may manage every agent anyway: no row, no lookup.
        const managerId = actorName === OWNER_NAME ? undefined : managerOnAdd(await actor());
        const row = await addPrincipal(host, {
          name,
          kind: 'agent',
          settlement: opts.settlement,
          ...(managerId === undefined ? {} : { managerId }),
        });
        await writeOut(`${row.name}\n`);
      }),
    );
  agent
    .command('ls')
    .description('list agents, how each settles, and the state of those the host runs')
    .option('--json', 'print [{name, kind, settlement, createdAt, run}] (run: null unless the host runs it)')
    .action(
      action(async ({ host }, opts: { json?: boolean }) => {
        const runs = await agentRunsByName(host);
        const run = (p: Principal) => runs.get(p.name);
        await writeList(await listPrincipalsByName(host, 'agent'), {
          json: opts.json,
          toJson: (p) => ({ ...principalJson(p), run: run(p) ?? null }),
          empty:
            'no agents (add one: sluice agent add NAME, or run one: sluice agent run NAME --driver claude --cwd DIR)',
          columns: [
            { header: 'NAME', cell: (p) => p.name },
            { header: 'SETTLEMENT', cell: (p) => p.settlement },
            { header: 'RUN', cell: (p) => runCell(run(p)) },
            { header: 'CREATED', cell: (p) => p.created_at },
          ],
        });
      }),
    );
  agent
    .command('settle <name> <mode>')
    .description('switch how an agent consumes messages: turn (drivers, hooks) or explicit (archive ids)')
    .action(
      action(async ({ host }, name: string, mode: string) => {
        if (mode !== 'turn' && mode !== 'explicit')
          throw new SluiceError('invalid_params', 'mode must be turn or explicit');
        await setSettlementMode(host, name, mode);
        await writeOut(`${name} settles ${mode === 'turn' ? 'by turns' : 'explicitly'}\n`);
      }),
    );

  agent
    .command('managers <agent>')
    .description('who manages an agent (may pause or resume its whole queue, change its managers)')
    .option('--json', 'print [{name, createdAt}]')
    .action(
      action(async ({ host, actor }, agentName: string, opts: { json?: boolean }) => {
        await writeList(await agentManagers(host, await actor(), agentName), {
          json: opts.json,
          toJson: (m) => ({ name: m.name, createdAt: m.created_at }),
          empty: `no managers (the owner and ${agentName} itself may still pause it)`,
          columns: [
            { header: 'NAME', cell: (m) => m.name },
            { header: 'SINCE', cell: (m) => m.created_at },
          ],
        });
      }),
    );
  agent
    .command('manage <agent> <person>')
    .description('make a person a manager of the agent (the owner or a manager only)')
    .action(
      action(async ({ host, actor }, agentName: string, personName: string) => {
        const added = await addAgentManager(host, await actor(), agentName, personName);
        await writeOut(`${personName} ${added ? 'now manages' : 'already manages'} ${agentName}\n`);
      }),
    );
  agent
    .command('unmanage <agent> <person>')
    .description('stop a person managing the agent (the owner or a manager only)')
    .action(
      action(async ({ host, actor }, agentName: string, personName: string) => {
        await removeAgentManager(host, await actor(), agentName, personName);
        await writeOut(`${personName} no longer manages ${agentName}\n`);
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
  person
    .command('ls')
    .description('list people')
    .option('--json', 'print [{name, kind, createdAt}]')
    .action(
      action(async ({ host }, opts: { json?: boolean }) => {
        await writeList(await listPrincipalsByName(host, 'person'), {
          json: opts.json,
          toJson: principalJson,
          empty: 'no people',
          columns: [
            { header: 'NAME', cell: (p) => p.name },
            { header: 'CREATED', cell: (p) => p.created_at },
          ],
        });
      }),
    );
}
