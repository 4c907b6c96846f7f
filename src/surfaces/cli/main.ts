import { Command, CommanderError } from 'commander';
import { addHelpSections, allCommands } from './help.js';
import { isReaderGone, reportError, writeOut } from './io.js';

/** The first steps, under `sluice --help`; each command's own help has its examples. */
const ROOT_EXAMPLES = `
Examples:
  $ sluice start
  $ sluice agent add helper
  $ sluice hooks install claude --as helper
  $ sluice message send helper -m "please review PR 42"
  $ sluice help message send

Every command takes --help; docs/cli-reference.md lists them all.
`;

type Register = (program: Command) => void;

// Each command module registers its commands; it is imported only when one of them runs (or for
// the full list: help, a mistyped command), so `sluice message ls` loads no server, MCP or bridge
// code. The order is the order of `sluice --help`.
const MODULES = {
  start: async () => (await import('./commands/start.js')).registerStartCommand,
  setup: async () => (await import('./commands/setup.js')).registerSetupCommands,
  agentRuns: async () => (await import('./commands/agent-runs.js')).registerAgentRunCommands,
  channels: async () => (await import('./commands/channels.js')).registerChannelCommands,
  messages: async () => (await import('./commands/messages.js')).registerMessageCommands,
  delivery: async () => (await import('./commands/delivery.js')).registerDeliveryCommands,
  hooks: async () => (await import('./commands/hooks.js')).registerHooksCommands,
  turns: async () => (await import('./commands/turns.js')).registerTurnCommands,
  queue: async () => (await import('./commands/queue.js')).registerQueueCommands,
  serve: async () => (await import('./commands/serve.js')).registerServeCommand,
  tokens: async () => (await import('./commands/tokens.js')).registerTokenCommands,
  drive: async () => (await import('./commands/drive.js')).registerDriveCommands,
  media: async () => (await import('./commands/media.js')).registerMediaCommands,
  mcp: async () => (await import('./commands/mcp.js')).registerMcpCommands,
  wait: async () => (await import('./commands/wait.js')).registerWaitCommand,
  bridge: async () => (await import('./commands/bridge.js')).registerBridgeCommands,
  approvals: async () => (await import('./commands/approvals.js')).registerApprovalCommands,
} satisfies Record<string, () => Promise<Register>>;

type ModuleName = keyof typeof MODULES;

/** The modules that register each top-level command (`init`, `agent` and `person` share one). */
const MODULES_OF: Record<string, readonly ModuleName[]> = {
  start: ['start'],
  init: ['setup'],
  agent: ['setup', 'agentRuns'],
  person: ['setup'],
  channel: ['channels'],
  message: ['messages'],
  delivery: ['delivery'],
  hooks: ['hooks'],
  hook: ['hooks'],
  turn: ['turns'],
  queue: ['queue'],
  serve: ['serve'],
  token: ['tokens'],
  'login-link': ['tokens'],
  drive: ['drive'],
  media: ['media'],
  mcp: ['mcp'],
  wait: ['wait'],
  bridge: ['bridge'],
  approval: ['approvals'],
};

/** Global options that take a value: their value is never the command word. */
const GLOBAL_VALUE_OPTIONS = new Set(['--home', '--db', '--as', '--durability']);

/**
 * The top-level command word of `args` (argv without node and the script), or undefined when
 * there is none or an option before it is not a global one (then commander explains).
 */
export function commandWord(args: readonly string[]): { word: string; index: number } | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (!arg.startsWith('-')) return { word: arg, index: i };
    if (GLOBAL_VALUE_OPTIONS.has(arg)) i++;
    else if (!GLOBAL_VALUE_OPTIONS.has(arg.split('=', 1)[0] as string)) return undefined;
  }
  return undefined;
}

/** The code of the CommanderError that `-V`/`--version` ends parsing with (main prints it). */
const VERSION_ASKED = 'sluice.version';

/**
 * Commander's error text as one line with a code: `error: unknown command 'mesage'\n(Did you
 * mean message?)` becomes `sluice: invalid_params: unknown command 'mesage' (did you mean message?)`.
 */
export function usageLine(text: string): string {
  const joined = text
    .replace(/^error: /, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => line.replace(/^\(Did you mean/, '(did you mean'))
    .join(' ');
  return `sluice: invalid_params: ${joined}\n`;
}

// `-V` is a plain option, not `.version(…)` (which wants the text up front): only the command
// that prints the version reads package.json, not every `sluice message …` the model runs.
// The global options are explained once, here; every subcommand's help names them in one line
// (help.ts): `sluice message ls --help` must still say how to pick `--as`.
function newProgram(): Command {
  return new Command('sluice')
    .description('a durable message host for AI agents and the people who work with them')
    .option('-V, --version', 'print the version')
    .on('option:version', () => {
      throw new CommanderError(0, VERSION_ASKED, '');
    })
    .option('--home <dir>', 'Sluice home (default $SLUICE_HOME, else ~/.sluice)')
    .option(
      '--db <url>',
      "database: a SQLite file's path or postgres://… (env SLUICE_DB; default: the home's SQLite file)",
    )
    .option('--as <name>', 'act as this principal (env SLUICE_AS; default owner)')
    .option('--durability <mode>', 'SQLite durability: full (default) or normal')
    .exitOverride()
    .showSuggestionAfterError(true)
    .addHelpText('after', ROOT_EXAMPLES)
    .configureOutput({
      writeErr: (text) => process.stderr.write(text.startsWith('error:') ? usageLine(text) : text),
    });
}

async function registerModules(program: Command, names: readonly ModuleName[]): Promise<Command> {
  const registers = await Promise.all(names.map((name) => MODULES[name]()));
  for (const register of registers) register(program);
  addHelpSections(program);
  for (const sub of allCommands(program)) {
    sub.exitOverride();
    sub.showHelpAfterError(false);
    sub.showSuggestionAfterError(true);
  }
  return program;
}

/** Builds the whole `sluice` command tree (every command module loaded). */
export function buildProgram(): Promise<Command> {
  return registerModules(newProgram(), Object.keys(MODULES) as ModuleName[]);
}

/**
 * The command tree `args` needs: only the modules of its command word, or all of them for help
 * and for a word that is no command (so commander can suggest the nearest one).
 */
export function buildProgramFor(args: readonly string[]): Promise<Command> {
  const found = commandWord(args);
  const target = found?.word === 'help' ? commandWord(args.slice(found.index + 1)) : found;
  // Own keys only: `sluice toString` is a mistyped command, not Object.prototype's.
  const names =
    target !== undefined && Object.hasOwn(MODULES_OF, target.word) ? MODULES_OF[target.word] : undefined;
  return registerModules(newProgram(), names ?? (Object.keys(MODULES) as ModuleName[]));
}

/**
 * `sluice help message send` is `sluice message send --help` (commander's own help command only
 * looks one word deep); help for a command that does not exist is that command, so the answer is
 * one line naming the nearest one instead of the whole help.
 */
export function expandHelp(args: readonly string[]): string[] {
  const found = commandWord(args);
  if (found?.word !== 'help') return [...args];
  const rest = args.slice(found.index + 1);
  const before = args.slice(0, found.index);
  if (rest[0] !== undefined && !rest[0].startsWith('-') && !Object.hasOwn(MODULES_OF, rest[0]))
    return [...before, ...rest];
  if (rest.length < 2) return [...args];
  return [...before, ...rest, '--help'];
}

/** A bug in a callback (a socket handler in `serve`, a timer) is still one line, not a stack. */
function crash(err: unknown): void {
  process.exitCode = reportError(err);
  process.exit();
}

/**
 * stdout's errors: a reader that went away (`sluice channel --help | head -1`) ends nothing and
 * prints nothing (commander writes help without a callback, so this is where its EPIPE arrives);
 * anything else is reported as a crash would be.
 */
function stdoutFailed(err: unknown): void {
  if (!isReaderGone(err)) crash(err);
}

/** CLI entry: exit 0 ok, 1 usage/validation, 2 not found/denied. */
export async function main(argv: readonly string[]): Promise<void> {
  // Once per process: in-process runners (tests, the fuzzers) call main many times.
  if (!process.listeners('uncaughtException').includes(crash)) {
    process.on('uncaughtException', crash);
    process.on('unhandledRejection', crash);
  }
  if (!process.stdout.listeners('error').includes(stdoutFailed)) process.stdout.on('error', stdoutFailed);
  const args = expandHelp(argv.slice(2));
  try {
    const program = await buildProgramFor(args);
    await program.parseAsync([...argv.slice(0, 2), ...args]);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === VERSION_ASKED) {
        const { packageVersion } = await import('../sluice-package.js');
        await writeOut(`${packageVersion()}\n`);
      }
      process.exitCode = err.exitCode === 0 ? 0 : 1;
      return;
    }
    process.exitCode = reportError(err);
  }
}
