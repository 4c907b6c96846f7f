// The wake with the REAL interactive Claude Code TUI (run under tmux; no keystroke is ever typed)
// against the scripted model server, hooks and wake installed by `sluice hooks install claude`:
// a message sent to a session idle at its prompt reaches the model with its complete body within
// seconds (median of 10 in `npm run eval:wake`, of 3 in `npm test`) and the woken turn replies and
// archives it; a slice the session already holds never wakes it again; a message that arrives
// mid-turn is handled next; a killed waiter, a restarted session and a restarted Sluice lose
// nothing. Every wait is on observable state (the pane, the model server's request log, the store,
// the waiter's process state), never a sleep. Writes the latencies to test-artifacts/wake-eval.json
// (docs/wake.md).
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { HostContext } from '../../src/host/identity/context.js';
import { openHost } from '../../src/host/identity/home.js';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { pendingCount } from '../../src/host/queue/inbox.js';
import { openTestHost, runCli, SLUICE_BIN, type TestHost } from '../support/host.js';
import {
  findTmux,
  preacceptClaudeTui,
  processAlive,
  sleepsInEventLoop,
  TmuxTui,
  until,
} from './support/claude-tui.js';
import { CLAUDE_CODE_VERSION, ensureClients, REPO_ROOT } from './support/clients.js';
import {
  isMainAgentRequest,
  type ModelServer,
  type RecordedRequest,
  shellCall,
  startModelServer,
} from './support/model-server.js';
import { type ClaudeHome, claudeEnv, makeClaudeHome } from './support/run-claude.js';

// Runs in npm test (SLUICE_E2E=1, the default there) when tmux is installed; SLUICE_E2E_TUI=0 leaves
// it out. `npm run eval:wake` runs it alone.
const enabled = process.env.SLUICE_E2E === '1' && process.env.SLUICE_E2E_TUI !== '0';
const tmuxPath = findTmux();
// The latency is a median over 10 rounds in `npm run eval:wake` (SLUICE_EVAL_WAKE=1), which checks
// the 3 s target; `npm test` takes the median of 3, enough for its loose bound (below).
// SLUICE_WAKE_ROUNDS sets another count.
const ROUNDS = Number(process.env.SLUICE_WAKE_ROUNDS) || (process.env.SLUICE_EVAL_WAKE === '1' ? 10 : 3);
const API_KEY = 'sk-ant-test-dummy';

const ENVELOPE_LINE = /\{"schema":"sluice\.delivery\.v1".*\}(?=\n|$)/g;

interface Envelope {
  messages: { id: string; body: string }[];
}

/** The last user-role message (Claude Code may append a `system` one, e.g. the date, after it). */
function lastUserMessage(req: RecordedRequest): { content: unknown } | undefined {
  return (req.body?.messages as { role: string; content: unknown }[] | undefined)
    ?.filter((m) => m.role === 'user')
    .at(-1);
}

/** Every text of a request's last user message (the wake arrives there inside a system-reminder). */
function lastMessageText(req: RecordedRequest): string {
  const last = lastUserMessage(req);
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return (last.content as { type: string; text?: string }[])
    .map((b) => (b.type === 'text' ? (b.text ?? '') : ''))
    .join('\n');
}

function envelopesIn(text: string): Envelope[] {
  return [...text.matchAll(ENVELOPE_LINE)].map((m) => JSON.parse(m[0]) as Envelope);
}

/** The envelope this request asks the model to act on: in the wake, or (after a notice) the latest in context. */
function envelopeToHandle(req: RecordedRequest): Envelope | undefined {
  const last = lastMessageText(req);
  const direct = envelopesIn(last).at(-1);
  if (direct) return direct;
  if (last.includes('[sluice] inbox for bot:'))
    return envelopesIn(JSON.stringify(req.body).replaceAll('\\n', '\n').replaceAll('\\"', '"')).at(-1);
  return undefined;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** How often `needle` occurs in the request as the client sent it. */
function occurrences(req: RecordedRequest, needle: string): number {
  return JSON.stringify(req.body).split(needle).length - 1;
}

/** A model reply held until the test releases it: the turn stays open meanwhile. */
interface Held {
  marker: string;
  seen: Promise<void>;
  arrived: () => void;
  release: () => void;
  released: Promise<void>;
}

function holdReplyTo(marker: string): Held {
  const held = { marker } as Held;
  held.seen = new Promise<void>((r) => {
    held.arrived = r;
  });
  held.released = new Promise<void>((r) => {
    held.release = r;
  });
  return held;
}

/** One model request that asked the model to handle a delivery (a wake, or a notice pointing at one). */
interface Handling {
  at: number;
  ids: string[];
}

describe.skipIf(!enabled || tmuxPath === '')(
  `the wake with the interactive Claude Code TUI${tmuxPath === '' ? ' (skipped: tmux is not installed)' : ''}`,
  () => {
    let host: TestHost;
    /** The store as a running Sluice holds it; closed and reopened by the restart test. */
    let sluice: HostContext | undefined;
    let server: ModelServer;
    let claudeHome: ClaudeHome;
    let claudeBin: string;
    let tui: TmuxTui;
    /** `archive`: the woken turn replies and archives; `reply-only`: it replies and leaves it pending. */
    let mode: 'archive' | 'reply-only' = 'archive';
    let held: Held | undefined;
    const handlings: Handling[] = [];
    const handledCount = (id: string) => handlings.filter((h) => h.ids.includes(id)).length;

    beforeAll(async () => {
      ({ claude: claudeBin } = await ensureClients());
      host = await openTestHost();
      sluice = host.ctx;
      await host.agent('bot');
      server = await startModelServer(async (req) => {
        if (!isMainAgentRequest(req)) return { text: 'side' };
        const last = lastUserMessage(req);
        const afterTool =
          Array.isArray(last?.content) &&
          last.content.some((b: { type: string }) => b.type === 'tool_result');
        if (afterTool) return { text: 'done' };
        const envelope = envelopeToHandle(req);
        if (!envelope || envelope.messages.length === 0) return { text: 'nothing to do' };
        const ids = envelope.messages.map((m) => m.id);
        handlings.push({ at: req.at, ids });
        const h = held;
        if (h && JSON.stringify(req.body).includes(h.marker)) {
          h.arrived();
          await h.released;
        }
        const cli = `${process.execPath} ${SLUICE_BIN}`;
        const replies = envelope.messages.map((m) => `${cli} message reply ${m.id} -m 'got: ${m.body}'`);
        const archive = mode === 'archive' ? ` && ${cli} message archive ${ids.join(' ')}` : '';
        return { toolCalls: [shellCall(req, `${replies.join(' && ')}${archive}`)] };
      });
      claudeHome = makeClaudeHome('sluice-wake-');
      preacceptClaudeTui(claudeHome, API_KEY, CLAUDE_CODE_VERSION);
      const install = await runCli(
        ['hooks', 'install', 'claude', '--as', 'bot', '--project', claudeHome.cwd],
        { home: host.home, env: { SLUICE_AGENT_LOCK: '', CLAUDE_CONFIG_DIR: claudeHome.configDir } },
      );
      expect(install.code, install.stderr).toBe(0);
      tui = new TmuxTui(tmuxPath, join(claudeHome.root, 'tmux.sock'));
    }, 600_000);

    afterAll(async () => {
      // Each client writes its config as it exits: wait for that before removing its home.
      for (const name of ['first', 'second']) await tui?.kill(name).catch(() => {});
      tui?.killServer();
      if (claudeHome) rmSync(claudeHome.root, { recursive: true, force: true });
      await server?.close();
      if (sluice !== host?.ctx) {
        // The restart test closed the first store and opened another one.
        await sluice?.store.close();
        rmSync(host.home, { recursive: true, force: true });
      } else await host?.close();
    });

    /** Starts `claude` in a tmux session and resolves once it is at its prompt (no keystroke). */
    async function startSession(name: string): Promise<void> {
      const env = claudeEnv(server, claudeHome, {
        env: { TERM: 'xterm-256color', ANTHROPIC_API_KEY: API_KEY },
      });
      delete env.NO_COLOR;
      const script = join(claudeHome.root, `${name}.sh`);
      const exports = Object.entries(env)
        .map(([k, v]) => `export ${k}='${String(v).replaceAll("'", "'\\''")}'`)
        .join('\n');
      writeFileSync(
        script,
        `#!/bin/sh\n${exports}\ncd '${claudeHome.cwd}'\nexec '${claudeBin}' --permission-mode bypassPermissions\n`,
        { mode: 0o755 },
      );
      tui.start(name, script);
      await tui.waitReady(name);
    }

    /** The pid of the session's registered waiter, while it runs (one record per Claude session). */
    function waiterPids(): number[] {
      const dir = join(host.home, 'hook-sessions');
      let names: string[] = [];
      try {
        names = readdirSync(dir).filter((f) => f.endsWith('.json'));
      } catch {
        return [];
      }
      return names.flatMap((f) => {
        try {
          const pid = JSON.parse(readFileSync(join(dir, f), 'utf8')).waiter?.pid;
          return typeof pid === 'number' && processAlive(pid) ? [pid] : [];
        } catch {
          return [];
        }
      });
    }

    /**
     * Resolves with the waiter's pid once `session` is idle at its prompt: no turn running, a waiter
     * other than `previous` registered (its watches are in place then) and asleep in its event loop
     * (its first look at the inbox is done).
     */
    async function idle(session: string, previous?: number): Promise<number> {
      let pid: number | undefined;
      await until(
        () => {
          pid = waiterPids().find((p) => p !== previous);
          return pid !== undefined && sleepsInEventLoop(pid) && tui.idleAtPrompt(session);
        },
        `${session} is idle at its prompt with a new waiter`,
        60_000,
      ).catch((err: Error) => {
        err.message += `\n${tui.pane(session)}`;
        throw err;
      });
      return pid as number;
    }

    const firstRequestWith = (body: string) =>
      server.mainCalls().find((r) => JSON.stringify(r.body).includes(body));

    /** `sluice message send bot -m BODY` (the CLI, as a person would); when it was started. */
    async function send(body: string): Promise<{ id: string; startedAt: number }> {
      const startedAt = Date.now();
      const run = await runCli(['message', 'send', 'bot', '-m', body], {
        home: host.home,
        env: { SLUICE_AGENT_LOCK: '' },
      });
      expect(run.code, run.stderr).toBe(0);
      return { id: run.stdout.trim(), startedAt };
    }

    /** When the send stored the message: its `created_at`, stamped in the transaction that commits it. */
    async function storedAt(id: string): Promise<number> {
      const row = await (sluice as HostContext).store.db
        .selectFrom('messages')
        .select('created_at')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      return Date.parse(row.created_at);
    }

    async function botPending(): Promise<number> {
      const ctx = sluice as HostContext;
      return pendingCount(ctx.store.db, (await resolvePrincipal(ctx, 'bot')).id);
    }

    /** Ids of messages replying to `id` (the woken turn's `sluice message reply`). */
    async function repliesTo(id: string): Promise<string[]> {
      const rows = await (sluice as HostContext).store.db
        .selectFrom('messages')
        .select('body')
        .where('reply_to', '=', id)
        .execute();
      return rows.map((r) => r.body);
    }

    async function handledAndArchived(id: string, body: string, what: string): Promise<void> {
      await until(async () => (await botPending()) === 0, `${what} is archived`, 90_000).catch((err) => {
        mkdirSync(join(REPO_ROOT, 'test-artifacts'), { recursive: true });
        const requests = JSON.stringify(server.mainCalls().map((r) => r.body.messages));
        writeFileSync(join(REPO_ROOT, 'test-artifacts', 'wake-failure-requests.json'), requests);
        console.log(tui.pane('first'), tui.pane('second'), server.scriptErrors);
        throw err;
      });
      expect(await repliesTo(id)).toEqual([`got: ${body}`]);
    }

    test(`an idle session is woken by a send with the complete body (median of ${ROUNDS}), and the woken turn replies and archives`, async () => {
      const load = [loadavg()[0] as number];
      await startSession('first');
      const sinceStored: number[] = [];
      const sinceStarted: number[] = [];
      // SessionStart starts the first waiter; each Stop starts the next one.
      let previous: number | undefined;
      for (let i = 0; i < ROUNDS; i++) {
        previous = await idle('first', previous);
        const requestsBefore = server.mainCalls().length;
        const body = `idle wake ${i} ${Math.random().toString(36).slice(2)}`;
        const { id, startedAt } = await send(body);
        await until(
          () => firstRequestWith(body) !== undefined,
          `a model request carries message ${i}`,
          60_000,
        );
        const request = firstRequestWith(body) as RecordedRequest;
        sinceStored.push(request.at - (await storedAt(id)));
        sinceStarted.push(request.at - startedAt);
        // The wake itself started the turn: the first request after the send carries the complete
        // body once (the woken turn's UserPromptSubmit did not add it a second time).
        expect(server.mainCalls()[requestsBefore]).toBe(request);
        expect(envelopeToHandle(request)?.messages).toEqual([expect.objectContaining({ id, body })]);
        expect(occurrences(request, body)).toBe(1);
        await handledAndArchived(id, body, `message ${i}`);
        expect(handledCount(id)).toBe(1);
      }
      load.push(loadavg()[0] as number);
      const wake = {
        client: `claude ${CLAUDE_CODE_VERSION} (interactive TUI under tmux)`,
        node: process.version,
        measuredAt: new Date().toISOString(),
        loadAverage1m: load,
        rounds: ROUNDS,
        sinceStoredMs: sinceStored,
        sinceCliStartedMs: sinceStarted,
        medianSinceStoredMs: median(sinceStored),
        medianSinceCliStartedMs: median(sinceStarted),
      };
      console.log(JSON.stringify(wake));
      mkdirSync(join(REPO_ROOT, 'test-artifacts'), { recursive: true });
      writeFileSync(
        join(REPO_ROOT, 'test-artifacts', 'wake-eval.json'),
        `${JSON.stringify(wake, null, 2)}\n`,
      );
      // The 3 s target is what `npm run eval:wake` measures alone; inside `npm test` (three
      // test files at once on 2 cores) the bound only catches a wake that fell back to the 30 s
      // safety re-check instead of hearing the commit.
      expect(wake.medianSinceStoredMs).toBeLessThanOrEqual(
        process.env.SLUICE_EVAL_WAKE === '1' ? 3_000 : 15_000,
      );
    }, 400_000);

    test('a slice the session already holds does not wake it again; a changed slice does', async () => {
      const before = await idle('first');
      mode = 'reply-only';
      const kept = `left pending ${Date.now()}`;
      const first = await send(kept);
      await until(() => handledCount(first.id) === 1, 'the kept message woke the session', 60_000);
      await until(async () => (await repliesTo(first.id)).length === 1, 'the woken turn replied', 60_000);
      // The woken turn ended and its Stop hook started a new waiter, which has looked at the inbox:
      // the same slice, so it holds.
      const holder = await idle('first', before);
      expect(await botPending()).toBe(1);
      const requests = server.mainCalls().length;
      expect(handledCount(first.id)).toBe(1);
      expect(processAlive(holder)).toBe(true);
      // A new message changes the slice: the holder wakes the session with both.
      mode = 'archive';
      const body = `changes the slice ${Date.now()}`;
      const second = await send(body);
      await until(() => handledCount(second.id) === 1, 'the new message woke the session', 60_000);
      expect(server.mainCalls().length).toBeGreaterThan(requests);
      const wake = handlings.find((h) => h.ids.includes(second.id));
      expect(wake?.ids).toEqual([first.id, second.id]);
      await handledAndArchived(second.id, body, 'both messages');
      expect(handledCount(first.id)).toBe(2);
      expect(handledCount(second.id)).toBe(1);
    }, 200_000);

    test('a message arriving mid-turn is handled in the next woken turn, without loss', async () => {
      await idle('first');
      const firstBody = `mid-turn first ${Date.now()}`;
      held = holdReplyTo(firstBody);
      const first = await send(firstBody);
      await held.seen; // the woken turn is open: its model reply is held
      await until(() => tui.busy('first'), 'the TUI shows the running turn', 30_000);
      const secondBody = `mid-turn second ${Date.now()}`;
      const second = await send(secondBody);
      expect(tui.busy('first')).toBe(true);
      held.release();
      held = undefined;
      await handledAndArchived(first.id, firstBody, 'the first message');
      await handledAndArchived(second.id, secondBody, 'the message sent mid-turn');
      expect(handledCount(first.id)).toBe(1);
      expect(handledCount(second.id)).toBe(1);
      // The open turn carried only the first; the second came in a wake of its own after it.
      const firstWake = handlings.find((h) => h.ids.includes(first.id));
      const secondWake = handlings.find((h) => h.ids.includes(second.id));
      expect(firstWake?.ids).toEqual([first.id]);
      expect(secondWake?.ids).toEqual([second.id]);
      expect((secondWake as Handling).at).toBeGreaterThan((firstWake as Handling).at);
    }, 200_000);

    test('a killed waiter and a restarted session lose nothing', async () => {
      const waiter = await idle('first');
      process.kill(waiter, 'SIGKILL');
      await until(() => !processAlive(waiter), 'the waiter is gone', 10_000);
      const body = `while nobody waits ${Date.now()}`;
      const lost = await send(body);
      expect(await botPending()).toBe(1); // pending, not consumed
      expect(handledCount(lost.id)).toBe(0);
      await tui.kill('first');
      await startSession('second');
      await handledAndArchived(lost.id, body, 'the message sent while nobody waited');
      expect(handledCount(lost.id)).toBe(1);
    }, 200_000);

    test('a restarted Sluice loses nothing: the waiting session is woken by sends while it is down and after', async () => {
      const waiter = await idle('second');
      // Sluice stops: the process that held the store open is gone.
      await (sluice as HostContext).store.close();
      sluice = undefined;
      const whileDownBody = `while sluice is down ${Date.now()}`;
      const whileDown = await send(whileDownBody);
      await until(
        () => handledCount(whileDown.id) === 1,
        'the session was woken while Sluice was down',
        60_000,
      );
      // Sluice starts again on the same store.
      sluice = await openHost({ home: host.home, durability: 'normal', pollMs: 10 });
      await handledAndArchived(whileDown.id, whileDownBody, 'the message sent while Sluice was down');
      await idle('second', waiter);
      const afterBody = `after the restart ${Date.now()}`;
      const owner = await resolvePrincipal(sluice, 'owner');
      const after = await sendMessage(sluice, owner, { to: 'bot', body: afterBody });
      await handledAndArchived(after.message_id, afterBody, 'the message sent through the restarted Sluice');
      expect(handledCount(whileDown.id)).toBe(1);
      expect(handledCount(after.message_id)).toBe(1);
      // Nothing was ever asked for twice across the whole session, except the slice that changed.
      const repeated = [...new Set(handlings.flatMap((h) => h.ids))].filter((id) => handledCount(id) > 1);
      expect(repeated.length).toBe(1);
    }, 200_000);
  },
);
