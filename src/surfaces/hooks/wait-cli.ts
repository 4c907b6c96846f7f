// Entry of `sluice wait …` (bin/sluice.js routes here without loading commander or the CLI graph):
// Claude Code starts it after every turn (an asyncRewake Stop hook) and at session start, so it
// starts like the hook does. It blocks until the agent has pending mail the session was not given
// yet, prints the bounded delivery and exits the way the client's wake expects. It waits on file
// notifications (SQLite) or LISTEN/NOTIFY (PostgreSQL), never a polling loop, and reads only.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { DeliveryLimits } from '../../core/envelope.js';
import { oneLine, SluiceError } from '../../core/errors.js';
import { asStoreFault } from '../../core/store-faults.js';
import { HOOK_LIMITS, type HookClient } from './adapters.js';
import { type HookEnvironment, hookEnvironment } from './hook-cli.js';
import { MAX_HOOK_STDIN_BYTES, parseHookInput, readBounded } from './hook-input.js';
import {
  claimWake,
  readSessionState,
  registerWaiter,
  type SessionKey,
  sessionFileName,
  type WaiterRecord,
  waiterObsolete,
} from './session-memory.js';
import { parseWaitArgs, type WaitArgs } from './wait-args.js';
import { openWaitSource } from './wait-sources.js';
import { type StopWatching, watchFolderFor } from './wait-watch.js';

/** Claude Code's asyncRewake convention: exit 2 wakes the session and shows stderr to the model. */
export const CLAUDE_WAKE_EXIT_CODE = 2;

/** How often a hook waiter checks that the Claude Code process that started it still runs. */
const CLIENT_ALIVE_CHECK_MS = 5_000;

/** Changes closer together than this are handled in one re-read (a burst of sends). */
const COALESCE_MS = 20;

/**
 * Re-reads after an outside fault (`unavailable`: PostgreSQL restarting, a disk full), doubling up
 * to the last: the store recovers by itself, and the wait lives on to wake the session then. A
 * change the watch reports meanwhile re-reads at once.
 */
export const FAULT_RETRY_MS = [250, 1_000, 2_000, 5_000, 10_000];

/**
 * True when Claude Code runs an asyncRewake hook in the background, so waiting is safe: the
 * interactive TUI (and IDE sessions). Any `claude -p` run — one prompt, or `--input-format
 * stream-json` under a program such as `sluice drive` — sets `CLAUDE_CODE_ENTRYPOINT=sdk-…` and
 * runs the hook in the foreground: a waiting hook would hang it, and a program that drives a
 * session delivers by itself. Unknown means no.
 */
export function claudeSessionIsInteractive(env: NodeJS.ProcessEnv): boolean {
  const entry = env.CLAUDE_CODE_ENTRYPOINT;
  if (entry === undefined || entry === '' || entry.startsWith('sdk-')) return false;
  return env.CLAUDE_CODE_SESSION_ATTENDED !== '0';
}

/** Why a wait ended without mail. */
export type QuietReason = 'timeout' | 'superseded' | 'turn-started' | 'client-gone' | 'not-interactive';

export type WaitResult = { kind: 'mail'; text: string } | { kind: 'quiet'; reason: QuietReason };

export interface WaitForMailOptions {
  where: HookEnvironment;
  limits: Partial<DeliveryLimits>;
  /**
   * Session memory: wake only for a slice this session was not given, and only as its newest
   * waiter. `promptId` is the prompt whose turn just ended (Stop), undefined at session start.
   */
  session: { key: SessionKey; promptId: string | null | undefined; event: string | null } | null;
  timeoutMs?: number | undefined;
  /** The client process: when it is gone, nobody is left to wake. */
  clientPid?: number | undefined;
  /** Where the wait reads (default: the store `where` names); tests stage a failing store here. */
  openSource?: typeof openWaitSource;
}

/** The short wake for a slice the session-start hook already put into a session that has not run a turn. */
export function sessionStartNotice(agent: string): string {
  return `[sluice] inbox for ${agent}: the delivery added to this session's context when it started is still pending; handle it now (its last line says how to reply and archive).`;
}

/**
 * Resolves once the agent has mail this caller may be woken for (read-only: nothing is consumed),
 * or quietly at the timeout, when a newer waiter or a newer prompt took over, or when the client
 * is gone. Changes are watched before the first read, so a commit between the two is not missed.
 */
export async function waitForMail(options: WaitForMailOptions): Promise<WaitResult> {
  const { where, session } = options;
  const source = await (options.openSource ?? openWaitSource)(where, options.limits);
  const stops: StopWatching[] = [];
  try {
    return await new Promise<WaitResult>((resolve, reject) => {
      let done = false;
      let running = false;
      let again = false;
      let scheduled: NodeJS.Timeout | undefined;
      let retry: NodeJS.Timeout | undefined;
      let faults = 0;
      let waiter: WaiterRecord | undefined;
      const finish = (result: WaitResult) => {
        if (done) return;
        done = true;
        if (scheduled !== undefined) clearTimeout(scheduled);
        if (retry !== undefined) clearTimeout(retry);
        resolve(result);
      };
      const fail = (err: unknown) => {
        if (done) return;
        done = true;
        if (retry !== undefined) clearTimeout(retry);
        reject(err);
      };
      // An outside fault ends no wait: read again later (the watch may be down with the store).
      const retryLater = () => {
        if (done || retry !== undefined) return;
        const delay = FAULT_RETRY_MS[Math.min(faults, FAULT_RETRY_MS.length - 1)] as number;
        faults++;
        retry = setTimeout(() => {
          retry = undefined;
          void check();
        }, delay);
      };
      const check = async () => {
        if (done) return;
        if (running) {
          again = true;
          return;
        }
        running = true;
        try {
          do {
            again = false;
            const text = await source.render();
            faults = 0;
            if (done || text === '') continue;
            if (session === null || waiter === undefined) return finish({ kind: 'mail', text });
            const decision = claimWake(session.key, text, waiter);
            if (decision === 'wake') return finish({ kind: 'mail', text });
            if (decision === 'notice') return finish({ kind: 'mail', text: sessionStartNotice(where.agent) });
            if (decision !== 'held') return finish({ kind: 'quiet', reason: decision });
          } while (again && !done);
        } catch (err) {
          // Raw driver errors too (a reset socket, SQLITE_BUSY): the mapping every surface uses.
          const fault = asStoreFault(err);
          if (fault instanceof SluiceError && fault.code === 'unavailable') retryLater();
          else fail(err);
        } finally {
          running = false;
        }
      };
      const schedule = () => {
        if (done || scheduled !== undefined) return;
        scheduled = setTimeout(() => {
          scheduled = undefined;
          void check();
        }, COALESCE_MS);
      };

      stops.push(source.watch(schedule));
      if (session !== null) {
        const name = sessionFileName(session.key);
        mkdirSync(join(session.key.home, 'hook-sessions'), { recursive: true, mode: 0o700 });
        stops.push(
          watchFolderFor(
            join(session.key.home, 'hook-sessions'),
            (f) => f === name,
            () => {
              if (waiter === undefined) return;
              const obsolete = waiterObsolete(readSessionState(session.key), waiter);
              if (obsolete !== null) finish({ kind: 'quiet', reason: obsolete });
              else schedule();
            },
          ),
        );
        // Registered only once every watch is in place: from here on, older waiters end and this
        // one sees every commit.
        waiter = registerWaiter(session.key, session.promptId, session.event);
      }
      if (options.timeoutMs !== undefined) {
        const timer = setTimeout(() => finish({ kind: 'quiet', reason: 'timeout' }), options.timeoutMs);
        stops.push(() => clearTimeout(timer));
      }
      const pid = options.clientPid;
      if (pid !== undefined) {
        const timer = setInterval(() => {
          try {
            process.kill(pid, 0);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code === 'ESRCH')
              finish({ kind: 'quiet', reason: 'client-gone' });
          }
        }, CLIENT_ALIVE_CHECK_MS);
        stops.push(() => clearInterval(timer));
      }
      void check();
    });
  } finally {
    for (const stop of stops) stop();
    await source.close();
  }
}

/**
 * Under the agent lock (the model's shell, DESIGN.md §8 I8) a wait reads only the locked agent's
 * inbox in the locked store: what is not given comes from the lock, anything else is refused.
 */
function lockedEnvironment(args: WaitArgs, env: NodeJS.ProcessEnv): HookEnvironment {
  const raw = env.SLUICE_AGENT_LOCK;
  if (raw === undefined || raw === '') return hookEnvironment(args, env);
  let lock: { agent?: unknown; home?: unknown; db?: unknown };
  try {
    lock = JSON.parse(raw) as typeof lock;
  } catch {
    throw new SluiceError('denied', 'SLUICE_AGENT_LOCK is not valid JSON; refusing to run unlocked');
  }
  if (typeof lock.agent !== 'string' || typeof lock.home !== 'string') {
    throw new SluiceError('denied', 'SLUICE_AGENT_LOCK names no agent and home; refusing to run unlocked');
  }
  const lockedDb = typeof lock.db === 'string' ? lock.db : undefined;
  const where = hookEnvironment(
    { as: args.as ?? lock.agent, home: args.home ?? lock.home, db: args.db ?? lockedDb },
    { ...env, SLUICE_DB: lockedDb ?? '', SLUICE_AS: '' },
  );
  if (where.agent !== lock.agent || where.home !== resolve(lock.home) || where.db !== lockedDb) {
    throw new SluiceError('denied', `this shell is locked to agent ${lock.agent} on its own store`);
  }
  return where;
}

/** What the process prints and how it exits. */
export interface WaitOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

function limitsFor(client: HookClient | undefined): Partial<DeliveryLimits> {
  return client === undefined ? {} : HOOK_LIMITS[client];
}

/**
 * Runs one `sluice wait`. With `--for claude` mail is printed on stderr with exit code 2 (Claude
 * Code's asyncRewake wakes the session and shows it to the model); otherwise on stdout with exit
 * code 0. Ending without mail prints nothing and exits 0.
 */
export async function runWait(
  argv: readonly string[],
  stdin: AsyncIterable<unknown>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<WaitOutcome> {
  const args = parseWaitArgs(argv);
  const quiet: WaitOutcome = { code: 0, stdout: '', stderr: '' };
  // Checked before anything is read or opened: in `claude -p` this hook runs in the foreground.
  if (args.hook && !claudeSessionIsInteractive(env)) return quiet;
  const where = lockedEnvironment(args, env);
  let session: WaitForMailOptions['session'] = null;
  let clientPid: number | undefined;
  if (args.hook) {
    const input = parseHookInput(await readBounded(stdin, MAX_HOOK_STDIN_BYTES));
    if (input.sessionId !== null) {
      const key = { home: where.home, client: 'claude', agent: where.agent, sessionId: input.sessionId };
      // A Stop hook knows the prompt its turn answered; at SessionStart the record's latest counts.
      const promptId = input.hookEventName === 'Stop' ? input.promptId : undefined;
      session = { key, promptId, event: input.hookEventName };
    }
    const pid = Number(env.CLAUDE_PID);
    if (Number.isSafeInteger(pid) && pid > 0) clientPid = pid;
  } else if (args.session !== undefined) {
    const key = {
      home: where.home,
      client: args.client ?? 'any',
      agent: where.agent,
      sessionId: args.session,
    };
    session = { key, promptId: undefined, event: null };
  }
  const result = await waitForMail({
    where,
    limits: limitsFor(args.client),
    session,
    timeoutMs: args.timeoutS === undefined ? undefined : args.timeoutS * 1000,
    clientPid,
  });
  if (result.kind === 'quiet') return quiet;
  if (args.client === 'claude') return { code: CLAUDE_WAKE_EXIT_CODE, stdout: '', stderr: result.text };
  return { code: 0, stdout: `${result.text}\n`, stderr: '' };
}

function write(stream: NodeJS.WriteStream, text: string): Promise<void> {
  if (text === '') return Promise.resolve();
  return new Promise((done) => stream.write(text, () => done()));
}

/**
 * `sluice wait …`. A problem prints one line and exits 1 — never 2, which would wake a Claude
 * session with an error; as a hook (`--hook`) it exits 0, so a broken store never disturbs the
 * session (Claude Code ignores a quiet background hook).
 */
export async function runWaitCli(argv: readonly string[]): Promise<void> {
  let outcome: WaitOutcome;
  try {
    outcome = await runWait(argv, process.stdin);
  } catch (err) {
    const reason =
      err instanceof SluiceError
        ? `${err.code}: ${err.message}`
        : `internal error: ${(err as Error)?.message ?? err}`;
    outcome = {
      code: argv.includes('--hook') ? 0 : 1,
      stdout: '',
      stderr: `sluice wait: ${oneLine(reason)}\n`,
    };
  }
  // A client that stopped listening must not turn into a crash (EPIPE).
  process.stdout.on('error', () => {});
  process.stderr.on('error', () => {});
  await write(process.stdout, outcome.stdout);
  await write(process.stderr, outcome.stderr);
  process.exit(outcome.code);
}
