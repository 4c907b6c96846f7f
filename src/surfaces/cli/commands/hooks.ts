import { homedir } from 'node:os';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import { resolveAgent } from '../../../host/principals.js';
import { claudeUserPaths, planClaudeInstall } from '../../hooks/install-claude.js';
import { codexUserDir, planCodexInstall } from '../../hooks/install-codex.js';
import {
  applyChanges,
  assertWritesInsideProject,
  currentLauncher,
  describeChanges,
  type InstallPlan,
} from '../../hooks/install-files.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';

interface InstallOptions {
  project?: string;
  user?: boolean;
  dryRun?: boolean;
  metadata?: boolean;
}

export function registerHooksCommands(program: Command): void {
  const hooks = program.command('hooks').description('connect Claude Code or Codex to your Sluice inbox');
  hooks
    .command('install <client>')
    .description(
      'merge the delivery hooks, the sluice MCP server and (Claude) permission rules into the client settings',
    )
    .option('--project <dir>', 'install into this project (Claude default: the current directory)')
    .option('--user', 'install into your user settings (Codex default)')
    .option('--dry-run', 'print the changes and write nothing')
    .option('--metadata', 'hooks deliver only the short metadata notice, not bodies')
    .action(
      action(async ({ host, global }, client: string, opts: InstallOptions) => {
        if (client !== 'claude' && client !== 'codex') {
          throw new SluiceError('invalid_params', 'hooks install takes claude or codex');
        }
        if (opts.project !== undefined && opts.user) {
          throw new SluiceError('invalid_params', 'use --project DIR or --user, not both');
        }
        const agentName = global.as ?? (process.env.SLUICE_AS || undefined);
        if (agentName === undefined) throw new SluiceError('invalid_params', 'name the agent: --as AGENT');
        const agent = await resolveAgent(host, agentName);
        const store = { home: host.home, db: global.db ?? (process.env.SLUICE_DB || undefined) };
        const launcher = currentLauncher();
        const plan: InstallPlan =
          client === 'claude'
            ? planClaudeInstall({
                agent: agent.name,
                store,
                launcher,
                metadata: opts.metadata,
                scope: opts.user
                  ? { user: claudeUserPaths(process.env, homedir()) }
                  : { project: resolve(opts.project ?? '.') },
              })
            : planCodexInstall({
                agent: agent.name,
                store,
                launcher,
                metadata: opts.metadata,
                codexDir:
                  opts.project !== undefined
                    ? resolve(opts.project, '.codex')
                    : codexUserDir(process.env, homedir()),
              });
        const project = client === 'claude' ? (opts.user ? undefined : (opts.project ?? '.')) : opts.project;
        if (project !== undefined) assertWritesInsideProject(resolve(project), plan.changes);
        const lines: string[] = [];
        if (plan.changes.length === 0) lines.push(`${client}: already installed, nothing to change`);
        else if (opts.dryRun)
          lines.push(`${client}: would change (dry run, nothing written):`, describeChanges(plan.changes));
        else {
          applyChanges(plan.changes);
          lines.push(...plan.changes.map((c) => `${c.before === null ? 'created' : 'updated'} ${c.path}`));
        }
        lines.push(...plan.notes);
        await writeOut(`${lines.join('\n')}\n`);
      }),
    );
}
