import { readFileSync, writeFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import { quoteInput } from '../../../core/text.js';
import {
  DEFAULT_SESSION_SETTINGS,
  databaseLocation,
  initHome,
  issueLoginCode,
  OWNER_NAME,
} from '../../../host/identity/index.js';
import { processLauncher } from '../../agents/launch.js';
import { startSupervisor } from '../../agents/supervisor.js';
import { currentLauncher } from '../../hooks/install-files.js';
import { isLoopbackHost } from '../../http/guard.js';
import { parseHttpLimits } from '../../http/limits.js';
import { openServeLog, serveLogPath, streamRequestLog } from '../../http/log-file.js';
import { type HostServer, startHostServer } from '../../http/server.js';
import { action } from '../context.js';
import { parseLimit, writeOut } from '../io.js';
import { sluiceCommandForHome } from '../on-path.js';
import { SERVE_ORIGIN_FILE } from './tokens.js';

interface ServeOptions {
  port?: string;
  host?: string;
  allowedHost?: string[];
  tlsCert?: string;
  tlsKey?: string;
  insecureRemote?: boolean;
  logFormat?: string;
  agents?: boolean;
}

function writeErr(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stderr.write(text, (err) => (err ? reject(err) : resolve()));
  });
}

const WILDCARD = new Set(['0.0.0.0', '::', '[::]']);

function readPem(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new SluiceError(
      'invalid_params',
      `${flag} ${path}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`,
    );
  }
}

/**
 * The certificate and key as OpenSSL takes them, checked before anything listens: a file that is
 * not PEM, or a key that is not the certificate's, is one line naming OpenSSL's reason.
 */
function usableTls(cert: Buffer, key: Buffer): { cert: Buffer; key: Buffer } {
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    const reason = String(message)
      .split('\n')[0]
      ?.replace(/^error:[0-9A-F]+:/, '');
    throw new SluiceError(
      'invalid_params',
      `--tls-cert and --tls-key must be a PEM certificate and its private key (${code ?? 'tls'}: ${reason})`,
    );
  }
  return { cert, key };
}

/**
 * Refuses to expose the host beyond this machine in the clear: a session cookie or access token
 * sent over plain HTTP on a network can be read by anyone on the path.
 */
function tlsFor(bindHost: string, opts: ServeOptions): { cert: Buffer; key: Buffer } | undefined {
  if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined))
    throw new SluiceError('invalid_params', '--tls-cert and --tls-key go together');
  if (opts.tlsCert !== undefined && opts.tlsKey !== undefined)
    return usableTls(readPem(opts.tlsCert, '--tls-cert'), readPem(opts.tlsKey, '--tls-key'));
  if (!isLoopbackHost(bindHost) && !opts.insecureRemote)
    throw new SluiceError(
      'invalid_params',
      `--host ${bindHost} is reachable from other machines: give --tls-cert and --tls-key, or --insecure-remote to serve plain HTTP anyway`,
    );
  return undefined;
}

/** Every address other machines can use when the host is bound to all interfaces. */
function interfaceUrls(protocol: string, port: number, v6: boolean): string[] {
  const urls: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.internal || (a.family === 'IPv6' && !v6)) continue;
      if (a.family === 'IPv6' && a.address.startsWith('fe80:')) continue;
      urls.push(`${protocol}//${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${port}`);
    }
  }
  return urls;
}

async function listen(options: Parameters<typeof startHostServer>[0]): Promise<HostServer> {
  try {
    return await startHostServer(options);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const where = `${options.host}:${options.port}`;
    if (code === 'EADDRINUSE')
      throw new SluiceError(
        'unavailable',
        `${where} is already in use (another sluice serve?); pick another port with --port N (0 picks a free one)`,
      );
    if (code === 'EACCES')
      throw new SluiceError(
        'unavailable',
        `not allowed to listen on ${where}; use a port above 1023 with --port N`,
      );
    if (code === 'EADDRNOTAVAIL')
      throw new SluiceError('unavailable', `${options.host} is not an address of this machine (--host)`);
    throw err;
  }
}

/** `sluice serve`: the host for people and devices, until SIGTERM/SIGINT. */
export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve JSON-RPC (/rpc), MCP (/mcp), media and the web page; prints a login link')
    .option('--port <n>', 'port (default 7777; 0 picks a free one)')
    .option('--host <addr>', 'address to bind (default 127.0.0.1; others need TLS or --insecure-remote)')
    .option(
      '--allowed-host <name>',
      'also answer to this Host name (repeatable; e.g. behind a proxy)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--tls-cert <file>', 'serve HTTPS with this PEM certificate')
    .option('--tls-key <file>', 'and this PEM private key')
    .option(
      '--insecure-remote',
      'allow plain HTTP on a non-loopback --host (tokens and cookies travel in the clear)',
    )
    .option(
      '--log-format <format>',
      'file: JSON request logs to <home>/logs/serve.log (default); json: to stdout, the banner to stderr',
    )
    .option('--no-agents', 'do not run the agents registered with sluice agent run (another host runs them)')
    .action(
      action(async ({ host: ctx, global }, opts: ServeOptions) => {
        const port = opts.port === '0' ? 0 : parseLimit(opts.port, '--port', 65535, 7777);
        const bindHost = opts.host ?? '127.0.0.1';
        if (!/^[A-Za-z0-9.:[\]-]+$/.test(bindHost))
          throw new SluiceError('invalid_params', `--host ${bindHost} is not an address`);
        for (const name of opts.allowedHost ?? [])
          if (!/^[A-Za-z0-9.:[\]-]{1,253}$/.test(name))
            throw new SluiceError('invalid_params', `--allowed-host ${quoteInput(name)} is not a host name`);
        const logFormat = opts.logFormat ?? 'file';
        if (logFormat !== 'file' && logFormat !== 'json')
          throw new SluiceError(
            'invalid_params',
            `--log-format ${quoteInput(logFormat, 40)}: use file or json`,
          );
        const tls = tlsFor(bindHost, opts);
        await initHome(ctx);
        // A person reads stdout (the banner); JSON lines go to a private file unless asked for, and
        // then stdout is theirs alone and the banner moves to stderr.
        const requestLog = logFormat === 'json' ? streamRequestLog(process.stdout) : openServeLog(ctx.home);
        const say = logFormat === 'json' ? writeErr : writeOut;
        const server = await listen({
          ctx,
          host: bindHost.replace(/^\[|\]$/g, ''),
          port,
          ...(tls ? { tls } : {}),
          allowedHosts: opts.allowedHost ?? [],
          httpLimits: parseHttpLimits(process.env.SLUICE_HTTP_LIMITS),
          logger: { level: process.env.SLUICE_LOG_LEVEL ?? 'info', stream: requestLog },
          logLinesDropped: requestLog.dropped,
        });
        const url = new URL(server.url);
        const bound = Number(url.port);
        // A wildcard bind reports 0.0.0.0 or [::], which no browser can open: sign in on loopback.
        const origin = WILDCARD.has(bindHost) ? `${url.protocol}//127.0.0.1:${bound}` : url.origin;
        try {
          writeFileSync(join(ctx.home, SERVE_ORIGIN_FILE), `${origin}\n`, { mode: 0o600 });
        } catch {
          // Only a convenience for `sluice login-link`; it takes --url too.
        }
        const launcher = currentLauncher();
        const sluice = sluiceCommandForHome(launcher, ctx.home);
        // Agents registered with `sluice agent run` for this machine and home (docs/agents.md).
        const supervisor =
          opts.agents === false
            ? undefined
            : startSupervisor(ctx, {
                launch: processLauncher({ launcher, home: ctx.home, db: databaseLocation(global.db) }),
                warn: (line) => server.app.log.warn({ event: 'agents' }, line),
              });
        const { code } = await issueLoginCode(ctx, OWNER_NAME);
        const lines = [`Sluice is serving ${origin}  (home ${ctx.home})`];
        if (WILDCARD.has(bindHost)) {
          const others = interfaceUrls(url.protocol, bound, bindHost !== '0.0.0.0');
          if (others.length > 0) lines.push(`Also reachable at ${others.join(', ')}`);
        }
        lines.push(
          `Login link: ${origin}/login?code=${code}`,
          `  (it works once, for ${DEFAULT_SESSION_SETTINGS.loginLinkTtlMs / 60_000} minutes; \`${sluice} login-link\` prints another)`,
          logFormat === 'json' ? 'Logs: JSON lines on stdout' : `Logs: ${serveLogPath(ctx.home)}`,
          opts.agents === false
            ? 'Agents: not run here (--no-agents)'
            : `Agents: runs those registered with ${sluice} agent run NAME --driver claude|codex --cwd DIR (${sluice} agent ls)`,
          'Stop: press Ctrl+C (or send SIGTERM)',
        );
        await say(`${lines.join('\n')}\n`);
        await new Promise<void>((resolve) => {
          const stop = (signal: string) => {
            server.app.log.info({ signal }, 'shutting down');
            process.off('SIGTERM', onTerm);
            process.off('SIGINT', onInt);
            // The agents stop first (each driver abandons a turn in flight), then the server.
            void (supervisor?.shutdown() ?? Promise.resolve())
              .then(() => server.close())
              .then(resolve, resolve);
          };
          const onTerm = () => stop('SIGTERM');
          const onInt = () => stop('SIGINT');
          process.once('SIGTERM', onTerm);
          process.once('SIGINT', onInt);
        });
      }),
    );
}
