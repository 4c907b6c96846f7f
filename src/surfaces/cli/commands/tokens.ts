import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import { quoteInput } from '../../../core/text.js';
import {
  DEFAULT_SESSION_SETTINGS,
  issueAccessToken,
  issueLoginCode,
  listCredentials,
  revokeCredential,
} from '../../../host/identity/index.js';
import { action } from '../context.js';
import { writeOut } from '../io.js';
import { writeList } from '../list-output.js';

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** `--expires 30d` (m, h, d or w) → milliseconds; `never` → null (no expiry). */
export function parseExpiry(text: string): number | null {
  if (text === 'never') return null;
  const match = /^(\d{1,5})([mhdw])$/.exec(text.trim());
  const n = match ? Number(match[1]) : 0;
  if (!match || n < 1)
    throw new SluiceError(
      'invalid_params',
      `--expires must look like 90m, 12h, 30d or 2w (or never), not ${quoteInput(text, 40)}`,
    );
  return n * (UNIT_MS[match[2] as string] as number);
}

/** Where `sluice serve` said it listens (written at its start), so a login link points there. */
export const SERVE_ORIGIN_FILE = 'serve-origin';

function serveOrigin(home: string, explicit: string | undefined): string {
  const text =
    explicit ??
    (() => {
      try {
        return readFileSync(join(home, SERVE_ORIGIN_FILE), 'utf8').trim();
      } catch {
        return 'http://127.0.0.1:7777';
      }
    })();
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new SluiceError('invalid_params', `--url must be the host's address, like http://127.0.0.1:7777`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new SluiceError('invalid_params', '--url must start with http:// or https://');
  return url.origin;
}

/** How long login-link waits for the host to take a connection before it adds its note. */
const HOST_CHECK_MS = 1000;

/**
 * Whether anything takes a TCP connection at `origin` within `timeoutMs` (a connect, not a
 * request: a host with a certificate the CLI would not trust still counts as there).
 */
export function hostAnswers(origin: string, timeoutMs = HOST_CHECK_MS): Promise<boolean> {
  const url = new URL(origin);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (answered: boolean) => {
      socket.destroy();
      resolve(answered);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

interface CreateOptions {
  expires?: string;
  note?: string;
}

const definedOnly = (o: CreateOptions): CreateOptions =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as CreateOptions;

/** Issues a token: the secret alone on stdout (for `$(…)`), then one line on how to use it. */
// The trailing Command is commander's (action() reads the global options from it).
const createToken = action(async ({ host }, name: string, own: CreateOptions, command: Command) => {
  // `token create ci --note x`: commander may hand --note/--expires to `token` (it takes them for
  // the older form); the merged options hold them wherever they landed.
  const opts = { ...(command.optsWithGlobals() as CreateOptions), ...definedOnly(own) };
  const issued = await issueAccessToken(host, name, {
    ...(opts.expires !== undefined ? { expiresInMs: parseExpiry(opts.expires) } : {}),
    note: opts.note,
  });
  await writeOut(`${issued.token}\n`);
  process.stderr.write(
    `shown once: send it as "Authorization: Bearer <token>" to the host (JSON-RPC /rpc, MCP /mcp for an agent); ${issued.id}${issued.expiresAt ? ` expires ${issued.expiresAt.slice(0, 10)}` : ' never expires'}; sluice token revoke ${issued.id} ends it\n`,
  );
});

/**
 * `sluice token create NAME [--note TEXT] [--expires 30d|never]` (and the older `sluice token
 * NAME`), `sluice token ls [--json]`, `sluice token revoke ID` and `sluice login-link [PERSON] [--url ORIGIN]`.
 */
export function registerTokenCommands(program: Command): void {
  const token = program
    .command('token')
    .description('access tokens for programs and agents: create, list, revoke')
    .argument('[name]', 'the older form of `token create NAME`')
    .option('--expires <age>', 'lifetime: 90m, 12h, 30d, 2w or never (default 90d)')
    .option('--note <text>', 'what the token is for, shown by token ls')
    .action(async (name: string | undefined, opts: CreateOptions, command: Command) => {
      if (name === undefined) {
        command.outputHelp();
        return;
      }
      await createToken(name, opts, command);
    });

  token
    .command('create <name>')
    .description('print a new access token acting as NAME (shown once; only its hash is kept)')
    .option('--note <text>', 'what the token is for, shown by token ls (one line, up to 200 characters)')
    .option('--expires <age>', 'lifetime: 90m, 12h, 30d, 2w or never (default 90d)')
    .action(createToken);

  token
    .command('ls')
    .description('list access tokens and browser sessions (never their secrets)')
    .option('--json', 'one JSON array: {id, kind, principal, created, expires, lastUsed, note}')
    .action(
      action(async ({ host }, opts: { json?: boolean }) => {
        await writeList(await listCredentials(host), {
          json: opts.json,
          empty: 'no tokens or sessions',
          columns: [
            { header: 'ID', cell: (r) => r.id },
            { header: 'KIND', cell: (r) => r.kind },
            { header: 'PRINCIPAL', cell: (r) => r.principal },
            { header: 'CREATED', cell: (r) => r.created },
            { header: 'EXPIRES', cell: (r) => r.expires ?? 'never' },
            { header: 'LAST USED', cell: (r) => r.lastUsed ?? '-' },
            { header: 'NOTE', cell: (r) => r.note ?? '' },
          ],
        });
      }),
    );

  token
    .command('revoke <id>')
    .description('revoke an access token or end a browser session (ids from `token ls`)')
    .action(
      action(async ({ host }, id: string) => {
        const kind = await revokeCredential(host, id);
        await writeOut(`${kind === 'token' ? 'revoked token' : 'ended session'} ${id}\n`);
      }),
    );

  program
    .command('login-link [person]')
    .description(
      `print a single-use sign-in link for the web page (valid ${DEFAULT_SESSION_SETTINGS.loginLinkTtlMs / 60_000} minutes)`,
    )
    .option('--url <origin>', "the host's address (default: where `sluice serve` last started)")
    .action(
      action(async ({ host, actorName }, person: string | undefined, opts: { url?: string }) => {
        const origin = serveOrigin(host.home, opts.url);
        const { code } = await issueLoginCode(host, person ?? actorName);
        await writeOut(`${origin}/login?code=${code}\n`);
        // The origin file outlives the host that wrote it (stopped, or another serve since).
        if (!(await hostAnswers(origin)))
          process.stderr.write(
            `note: no host answers at ${origin}; start it with sluice serve (or npm start)\n`,
          );
      }),
    );
}
