import { homedir } from 'node:os';
import { resolve, sep } from 'node:path';
import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import { databaseLocation, resolveAgent } from '../../../host/identity/index.js';
import { type ClaudeScope, claudeUserPaths, planClaudeInstall } from '../../hooks/install-claude.js';
import { codexUserDir, planCodexInstall } from '../../hooks/install-codex.js';
import {
  applyChanges,
  assertWritesInsideProject,
  currentLauncher,
  describeChanges,
  type FileChange,
  type InstallPlan,
} from '../../hooks/install-files.js';
import { planClaudeUninstall, planCodexUninstall } from '../../hooks/uninstall.js';
import { action } from '../context.js';
import { reportError, writeOut } from '../io.js';
import { launcherNotes } from '../on-path.js';

interface InstallOptions {
  project?: string;
  user?: boolean;
  dryRun?: boolean;
  metadata?: boolean;
  /** false with --no-wake. */
  wake?: boolean;
}

/** Claude's scope: the user's settings (--user), else a project with the user's global config for its local MCP entry. */
function claudeScope(opts: { project?: string; user?: boolean }): ClaudeScope {
  const user = claudeUserPaths(process.env, homedir());
  return opts.user ? { user } : { project: resolve(opts.project ?? '.'), globalConfig: user.globalConfig };
}

/** The changes inside the project folder (the local MCP entry lives in the user's own config). */
function projectChanges(project: string, plan: InstallPlan): FileChange[] {
  const root = resolve(project);
  return plan.changes.filter((c) => c.path.startsWith(`${root}${sep}`));
}

const changeLine = (c: FileChange): string =>
  `${c.after === null ? 'deleted' : c.before === null ? 'created' : 'updated'} ${c.path}`;

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
    .option(
      '--no-wake',
      'Claude: do not install the wake (an idle session then hears mail only at its next prompt)',
    )
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
        const store = { home: host.home, db: databaseLocation(global.db) };
        const launcher = currentLauncher();
        const plan: InstallPlan =
          client === 'claude'
            ? planClaudeInstall({
                agent: agent.name,
                store,
                launcher,
                metadata: opts.metadata,
                wake: opts.wake,
                scope: claudeScope(opts),
              })
            : planCodexInstall({
                agent: agent.name,
                store,
                launcher,
                metadata: opts.metadata,
                inProject: opts.project !== undefined,
                codexDir:
                  opts.project !== undefined
                    ? resolve(opts.project, '.codex')
                    : codexUserDir(process.env, homedir()),
              });
        const project = client === 'claude' ? (opts.user ? undefined : (opts.project ?? '.')) : opts.project;
        if (project !== undefined) assertWritesInsideProject(resolve(project), projectChanges(project, plan));
        const lines: string[] = [];
        if (plan.changes.length === 0) lines.push(`${client}: already installed, nothing to change`);
        else if (opts.dryRun)
          lines.push(`${client}: would change (dry run, nothing written):`, describeChanges(plan.changes));
        else {
          applyChanges(plan.changes);
          lines.push(...plan.changes.map(changeLine));
        }
        lines.push(...plan.notes, ...launcherNotes(launcher, client, agent.name));
        await writeOut(`${lines.join('\n')}\n`);
      }),
    );
  // What the installed hooks run (bin/sluice.js takes a fast path past commander); here for
  // --help and for global options written before it. Not listed: people do not run it by hand.
  program
    .command('hook <client> <event>', { hidden: true })
    .description(
      'print the delivery for a client hook (claude|codex, session-start|user-prompt-submit); run by the hooks hooks install writes',
    )
    .option('--metadata', 'only the short metadata notice, not bodies')
    .action(async (client: string, event: string, opts: { metadata?: boolean }, command: Command) => {
      const global = command.optsWithGlobals() as { as?: string; home?: string; db?: string };
      const argv = [client, event];
      if (global.as !== undefined) argv.push('--as', global.as);
      if (global.home !== undefined) argv.push('--home', global.home);
      if (global.db !== undefined) argv.push('--db', global.db);
      if (opts.metadata) argv.push('--metadata');
      const { runHookCli } = await import('../../hooks/hook-cli.js');
      await runHookCli(argv);
    });
  hooks
    .command('uninstall <client>')
    .description('remove what hooks install added (hooks, wake, permission rules, agent lock, MCP server)')
    .option('--project <dir>', 'the project to clean (Claude default: the current directory)')
    .option('--user', 'your user settings (Codex default)')
    .option('--dry-run', 'print the changes and write nothing')
    .action(async (client: string, opts: Omit<InstallOptions, 'metadata' | 'wake'>) => {
      try {
        await uninstall(client, opts);
      } catch (err) {
        process.exitCode = reportError(err);
      }
    });
}

async function uninstall(client: string, opts: Omit<InstallOptions, 'metadata' | 'wake'>): Promise<void> {
  if (client !== 'claude' && client !== 'codex') {
    throw new SluiceError('invalid_params', 'hooks uninstall takes claude or codex');
  }
  if (opts.project !== undefined && opts.user) {
    throw new SluiceError('invalid_params', 'use --project DIR or --user, not both');
  }
  // The model's shell runs under the agent lock; removing the lock from its settings is not its call.
  if (process.env.SLUICE_AGENT_LOCK) {
    throw new SluiceError('denied', 'hooks uninstall is not available under the agent lock');
  }
  const plan =
    client === 'claude'
      ? planClaudeUninstall(claudeScope(opts))
      : planCodexUninstall(
          opts.project !== undefined ? resolve(opts.project, '.codex') : codexUserDir(process.env, homedir()),
          opts.project !== undefined,
        );
  // Like install: a project's symlinked .claude/.codex must not lead the edit out of the project.
  const project = client === 'claude' ? (opts.user ? undefined : (opts.project ?? '.')) : opts.project;
  if (project !== undefined) assertWritesInsideProject(resolve(project), projectChanges(project, plan));
  const lines: string[] = [];
  if (plan.changes.length === 0)
    lines.push(`${client}: nothing of sluice's installed here, nothing to change`);
  else if (opts.dryRun)
    lines.push(`${client}: would change (dry run, nothing written):`, describeChanges(plan.changes));
  else {
    applyChanges(plan.changes);
    lines.push(...plan.changes.map(changeLine));
  }
  lines.push(...plan.notes);
  await writeOut(`${lines.join('\n')}\n`);
}
