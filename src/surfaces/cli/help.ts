// What `sluice … --help` adds to commander's help: an Examples section for every top-level command
// (kept here, in one table, so a command module stays about what the command does), and one line
// naming the global options under every subcommand — they are explained once, in `sluice --help`.
import type { Command } from 'commander';

/**
 * Example command lines per top-level command, as a user types them. Each is checked by
 * test/cli/help.test.ts to name a command that exists.
 */
export const EXAMPLES: Readonly<Record<string, readonly string[]>> = {
  start: ['sluice start', 'sluice --home ~/work/.sluice start'],
  init: ['sluice init'],
  agent: [
    'sluice agent add helper',
    'sluice agent run helper --driver claude --cwd ~/src/app   # the running serve starts it',
    'sluice agent stop helper',
    'sluice agent ls',
    'sluice agent settle helper turn',
    'sluice agent manage helper alice',
  ],
  person: ['sluice person add alice', 'sluice person ls --json'],
  channel: [
    'sluice channel create ops --members helper,alice',
    'sluice channel history "#ops" --limit 50',
    'sluice channel add "#ops" bob',
    'sluice --as bob channel invitations --json',
    'sluice --as bob channel accept "#ops"',
    'sluice --as bob channel decline c_01J…',
    'sluice --as bob channel block mallory              # drop their invitations, now and later',
    'sluice --as bob channel unblock mallory',
  ],
  message: [
    'sluice message send helper -m "please review PR 42"',
    'sluice message send "#ops" -m "deploy done" --attach report.pdf',
    'sluice --as helper message ls --include-body',
    'sluice --as helper message reply msg_01J… -m "on it" --archive',
    'sluice message status msg_01J…                     # where it stands with each agent',
  ],
  delivery: ['sluice --as helper delivery --for claude', 'sluice --as helper delivery --metadata'],
  hooks: [
    'sluice hooks install claude --as helper            # this project, per-user files only',
    'sluice hooks install codex --as helper --user',
    'sluice hooks install claude --as helper --dry-run',
    'sluice hooks uninstall claude',
  ],
  hook: ['sluice --as helper hook claude user-prompt-submit < payload.json'],
  turn: ['sluice --as helper turn begin --session s1', 'sluice --as helper turn end turn_01J… --ok'],
  queue: [
    'sluice queue summary helper',
    'sluice queue ls helper --limit 10',
    'sluice queue pause helper --reason "rotating keys"',
    'sluice queue resume helper',
  ],
  serve: ['sluice serve', 'sluice serve --port 8080'],
  token: [
    'sluice token create ci --note "GitHub Actions deploy" --expires 30d',
    'sluice token ls',
    'sluice token revoke tok_3f2a…',
  ],
  'login-link': ['sluice login-link', 'sluice login-link alice --url https://sluice.example.org'],
  drive: [
    'sluice --as helper drive claude --cwd ~/src/app',
    'sluice --as helper drive codex --cwd ~/src/app',
  ],
  media: ['sluice media gc'],
  mcp: ['sluice --as helper mcp'],
  wait: ['sluice --as helper wait --for claude --timeout 600'],
  bridge: ['sluice bridge telegram --agent helper', 'sluice bridge telegram pair alice'],
  approval: [
    'sluice approval ls                                  # pending requests you may decide',
    'sluice approval ls --agent helper --all --json',
    'sluice approval allow apr_3f2a…',
    'sluice approval allow apr_3f2a… --always           # and this exact command from now on',
    'sluice approval deny apr_3f2a… --note "use the staging database"',
    'sluice approval answer apr_7b10… "Blue, with white letters"  # a question the model asked',
    'sluice approval rules helper',
    'sluice approval rules helper --revoke rul_9c1d…',
    'sluice approval policy helper --timeout 30m',
  ],
};

/** The global options, as the one line a subcommand's help shows. */
const GLOBAL_LINE =
  '\nGlobal options (sluice --help explains them): --home DIR, --db URL, --as NAME, --durability MODE\n';

function commandPath(command: Command): string[] {
  const words: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) words.unshift(c.name());
  return words;
}

/** Every command under `command`, depth first. */
export function allCommands(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/**
 * Adds the Examples section to each top-level command (and, for a group, to its subcommands the
 * examples name) and the global-options line to every subcommand's help.
 */
export function addHelpSections(program: Command): void {
  for (const command of allCommands(program)) {
    const path = commandPath(command);
    const top = EXAMPLES[path[0] as string] ?? [];
    // A group shows all its examples; a subcommand the ones that run it.
    const prefix = `sluice ${path.join(' ')}`;
    const examples =
      path.length === 1 ? top : top.filter((e) => e.replace(/ --(as|home) \S+/g, '').startsWith(prefix));
    const text = examples.length > 0 ? `\nExamples:\n${examples.map((e) => `  $ ${e}`).join('\n')}\n` : '';
    command.addHelpText('after', `${text}${GLOBAL_LINE}`);
  }
}
