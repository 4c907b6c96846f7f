import { Command, CommanderError } from 'commander';
import { registerBridgeCommands } from './commands/bridge.js';
import { registerChannelCommands } from './commands/channels.js';
import { registerDeliveryCommands } from './commands/delivery.js';
import { registerDriveCommands } from './commands/drive.js';
import { registerHooksCommands } from './commands/hooks.js';
import { registerMcpCommands } from './commands/mcp.js';
import { registerMediaCommands } from './commands/media.js';
import { registerMessageCommands } from './commands/messages.js';
import { registerQueueCommands } from './commands/queue.js';
import { registerServeCommand } from './commands/serve.js';
import { registerSetupCommands } from './commands/setup.js';
import { registerStartCommand } from './commands/start.js';
import { registerTokenCommands } from './commands/tokens.js';
import { registerTurnCommands } from './commands/turns.js';
import { registerWaitCommand } from './commands/wait.js';
import { reportError } from './io.js';

/** Builds the `sluice` command tree. */
export function buildProgram(): Command {
  const program = new Command('sluice')
    .description('a durable message host for AI agents and the people who work with them')
    .option('--home <dir>', 'Sluice home (default $SLUICE_HOME, else ~/.sluice)')
    .option('--db <url>', 'database: the SQLite file in the home by default; postgres://… (env SLUICE_DB)')
    .option('--as <name>', 'act as this principal (env SLUICE_AS; default owner)')
    .option('--durability <mode>', 'SQLite durability: full (default) or normal')
    .exitOverride()
    .configureOutput({
      writeErr: (text) =>
        process.stderr.write(text.startsWith('error:') ? `sluice: ${text.split('\n')[0]}\n` : text),
    });
  registerStartCommand(program);
  registerSetupCommands(program);
  registerChannelCommands(program);
  registerMessageCommands(program);
  registerDeliveryCommands(program);
  registerHooksCommands(program);
  registerTurnCommands(program);
  registerQueueCommands(program);
  registerServeCommand(program);
  registerTokenCommands(program);
  registerDriveCommands(program);
  registerMediaCommands(program);
  registerMcpCommands(program);
  registerWaitCommand(program);
  registerBridgeCommands(program);
  for (const sub of allCommands(program)) {
    sub.exitOverride();
    sub.showHelpAfterError(false);
  }
  return program;
}

function allCommands(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/** CLI entry: exit 0 ok, 1 usage/validation, 2 not found/denied. */
export async function main(argv: readonly string[]): Promise<void> {
  // A bug in a callback (a socket handler in `serve`, a timer) is still one line, not a stack.
  const crash = (err: unknown) => {
    process.exitCode = reportError(err);
    process.exit();
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  const program = buildProgram();
  try {
    await program.parseAsync([...argv]);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode === 0 ? 0 : 1;
      return;
    }
    process.exitCode = reportError(err);
  }
}
