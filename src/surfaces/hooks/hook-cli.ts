// Entry of `sluice hook …` (bin/sluice.js routes here without loading commander or the CLI).
// Its import graph is kept small on purpose: a hook runs before every prompt. Everything heavy
// (Kysely, the host services) is imported only on the fallback path.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { type DeliveryLimits, renderDelivery, renderMetadataNotice } from '../../core/envelope.js';
import { oneLine, SluiceError } from '../../core/errors.js';
import { quoteInput } from '../../core/text.js';
import { HOOK_EVENT_NAMES, HOOK_LIMITS, hookOutput } from './adapters.js';
import { type HookArgs, parseHookArgs } from './hook-args.js';
import { MAX_HOOK_STDIN_BYTES, parseHookInput, readBounded } from './hook-input.js';
import { claimHookDelivery, forgetOldSessions, notePrompt } from './session-memory.js';
import { openPendingReader } from './sqlite-pending.js';

/** Where a hook finds its store and agent: the same rules as the CLI (DESIGN.md §4). */
export interface HookEnvironment {
  home: string;
  /** `postgres://…`, a SQLite file path, or undefined for the SQLite file in the home. */
  db: string | undefined;
  agent: string;
}

export function hookEnvironment(
  args: Pick<HookArgs, 'as' | 'home' | 'db'>,
  env: NodeJS.ProcessEnv = process.env,
): HookEnvironment {
  const chosen = args.home ?? env.SLUICE_HOME;
  // Empty would resolve to the directory the client runs the hook in, not a home.
  if (chosen === '')
    throw new SluiceError('invalid_params', '--home / SLUICE_HOME is empty: name the home folder');
  const home = resolve(chosen ?? join(homedir(), '.sluice'));
  const db = args.db ?? (env.SLUICE_DB || undefined);
  const agent = args.as ?? (env.SLUICE_AS || undefined);
  if (agent === undefined) throw new SluiceError('invalid_params', 'name the agent: --as AGENT or SLUICE_AS');
  return { home, db, agent };
}

const isPostgres = (db: string | undefined) => db !== undefined && /^postgres(ql)?:\/\//.test(db);

/**
 * The text this hook call delivers ('' for nothing): bodies within the client's cap, or the
 * short metadata notice with `--metadata`. Read-only: the store is opened read-only when it is
 * SQLite, and no inbox state ever changes.
 */
export async function renderHookContext(args: HookArgs, where: HookEnvironment): Promise<string> {
  const limits = HOOK_LIMITS[args.client];
  if (!isPostgres(where.db)) {
    const path = where.db ?? join(where.home, 'sluice.db');
    if (!existsSync(path)) throw new SluiceError('not_found', `no sluice store at ${path} (run sluice init)`);
    const reader = openPendingReader(path);
    if (reader !== null) {
      try {
        const maxMessages = limits.maxMessages ?? 16;
        const slice = reader.pendingSlice(where.agent, args.metadata ? 1 : maxMessages + 1);
        // Attachments are handed over as local copies (DESIGN.md §6), which the host writes:
        // only then does the hook pay for the full host graph.
        const withFiles = slice.candidates.slice(0, maxMessages).some((c) => c.attachments.length > 0);
        if (withFiles && !args.metadata) return await renderThroughHost(args, where, limits);
        if (args.metadata) {
          const oldest = slice.candidates[0];
          return renderMetadataNotice({
            agent: slice.agentName,
            totalPending: slice.totalPending,
            oldest: oldest
              ? { id: oldest.id, from: oldest.from, sender: oldest.sender, createdAt: oldest.createdAt }
              : null,
          });
        }
        return renderDelivery({
          agent: slice.agentName,
          totalPending: slice.totalPending,
          candidates: slice.candidates,
          limits,
        }).text;
      } finally {
        reader.close();
      }
    }
  }
  return renderThroughHost(args, where, limits);
}

/**
 * PostgreSQL, a SQLite schema newer than the direct reader, or attachments to materialise: the
 * full host services.
 */
async function renderThroughHost(
  args: HookArgs,
  where: HookEnvironment,
  limits: Partial<DeliveryLimits>,
): Promise<string> {
  const [{ openHost }, { resolvePrincipal }, { deliveryFor, metadataNoticeFor }, { attachmentCopies }] =
    await Promise.all([
      import('../../host/identity/index.js'),
      import('../../host/identity/index.js'),
      import('../../host/queue/index.js'),
      import('../../host/media/index.js'),
    ]);
  const host = await openHost({ home: where.home, db: where.db });
  try {
    const agent = await resolvePrincipal(host, where.agent);
    if (args.metadata) return await metadataNoticeFor(host, agent);
    // A copy that cannot be written leaves that attachment without a path (the envelope and one
    // stderr line say why), not the delivery out.
    const attachmentPath = attachmentCopies(host, agent, (line) => process.stderr.write(`sluice: ${line}\n`));
    return (await deliveryFor(host, agent, { limits, attachmentPath })).text;
  } finally {
    await host.store.close();
  }
}

/** Runs one hook call and returns what goes to stdout ('' for nothing). Throws on any problem. */
export async function runHook(
  argv: readonly string[],
  stdin: AsyncIterable<unknown>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const args = parseHookArgs(argv);
  const input = parseHookInput(await readBounded(stdin, MAX_HOOK_STDIN_BYTES));
  const expected = HOOK_EVENT_NAMES[args.event];
  if (input.hookEventName !== null && input.hookEventName !== expected) {
    throw new SluiceError(
      'invalid_params',
      `hook input is for ${quoteInput(input.hookEventName, 60)}, this hook answers ${expected}`,
    );
  }
  const where = hookEnvironment(args, env);
  const session =
    input.sessionId === null
      ? null
      : { home: where.home, client: args.client, agent: where.agent, sessionId: input.sessionId };
  // A submitted prompt opens a turn: a waiter started before it must not wake the session now.
  if (session !== null && args.event === 'user-prompt-submit' && input.promptId !== null)
    notePrompt(session, input.promptId);
  const text = await renderHookContext(args, where);
  if (text === '') return '';
  if (args.event === 'session-start') forgetOldSessions(where.home);
  if (session !== null && !claimHookDelivery(session, text, input.source, args.event)) return '';
  return hookOutput(args.event, text);
}

/**
 * `sluice hook claude|codex <event>`: prints the hook JSON, or nothing. Fails open: whatever goes
 * wrong, stdout stays empty, stderr gets one line and the exit code is 0, so the user's prompt is
 * never blocked by the inbox.
 */
export async function runHookCli(argv: readonly string[]): Promise<void> {
  let out = '';
  try {
    out = await runHook(argv, process.stdin);
  } catch (err) {
    const reason =
      err instanceof SluiceError
        ? `${err.code}: ${err.message}`
        : `internal error: ${(err as Error)?.message ?? err}`;
    process.stderr.write(`sluice hook: ${oneLine(reason)} (delivery skipped)\n`);
    out = '';
  }
  // A client that stopped listening must not turn into a crash (EPIPE): the delivery is optional.
  process.stdout.on('error', () => {});
  if (out !== '') await new Promise<void>((done) => process.stdout.write(`${out}\n`, () => done()));
  process.exitCode = 0;
}
