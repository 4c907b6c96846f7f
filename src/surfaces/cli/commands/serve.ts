import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import { initHome, OWNER_NAME } from '../../../host/home.js';
import { issueToken } from '../../../host/principals.js';
import { startHostServer } from '../../http/server.js';
import { action } from '../context.js';
import { parseLimit, writeOut } from '../io.js';

/** `sluice serve`: the host for people and devices, until SIGTERM/SIGINT. */
export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve JSON-RPC (/rpc), MCP (/mcp), media and the web page; prints a login link')
    .option('--port <n>', 'port (default 7777; 0 picks a free one)')
    .option('--host <addr>', 'address to bind (default 127.0.0.1)')
    .action(
      action(async ({ host: ctx }, opts: { port?: string; host?: string }) => {
        const port = opts.port === '0' ? 0 : parseLimit(opts.port, '--port', 65535, 7777);
        const bindHost = opts.host ?? '127.0.0.1';
        if (!/^[A-Za-z0-9.:[\]-]+$/.test(bindHost))
          throw new SluiceError('invalid_params', `--host ${bindHost} is not an address`);
        await initHome(ctx);
        const server = await startHostServer({
          ctx,
          host: bindHost,
          port,
          // Structured logs go to stderr so stdout stays the login link.
          logger: { level: process.env.SLUICE_LOG_LEVEL ?? 'info', stream: process.stderr },
        });
        const token = await issueToken(ctx, OWNER_NAME);
        const url = new URL(server.url);
        await writeOut(
          `Sluice is serving ${server.url} (home ${ctx.home})\nLogin link: ${url.origin}/login?token=${token}\n`,
        );
        await new Promise<void>((resolve) => {
          const stop = (signal: string) => {
            server.app.log.info({ signal }, 'shutting down');
            process.off('SIGTERM', onTerm);
            process.off('SIGINT', onInt);
            server.close().then(resolve, resolve);
          };
          const onTerm = () => stop('SIGTERM');
          const onInt = () => stop('SIGINT');
          process.once('SIGTERM', onTerm);
          process.once('SIGINT', onInt);
        });
      }),
    );
}
