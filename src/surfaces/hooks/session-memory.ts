// Claude Code and Codex fire SessionStart and then UserPromptSubmit before the first model call,
// and both keep earlier hook context in the conversation. Remembering, per session, the last text
// handed over lets a hook skip a delivery the model already holds (same pending slice, same
// counts) instead of doubling the request. The wake (`sluice wait`, an asyncRewake hook) shares
// the record: it never wakes for a slice the session was already given, by a hook or by an
// earlier wake, and it steps aside once a newer waiter or a newer prompt exists. This is a cache
// beside the store, never inbox state: losing it only means one repeated delivery.
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

/** SessionStart sources after which the model no longer holds earlier context. */
const CONTEXT_RESET_SOURCES = new Set(['clear', 'compact']);

export interface SessionKey {
  home: string;
  client: string;
  agent: string;
  sessionId: string;
}

/** Who handed the session its latest delivery. */
export type DeliveredBy = 'session-start' | 'user-prompt-submit' | 'wake';

/** The waiter allowed to wake this session: the newest one registered. */
export interface WaiterRecord {
  token: string;
  pid: number;
  /**
   * The prompt that was the session's latest when this waiter started (the Stop hook's
   * `prompt_id`, or what the record held at SessionStart). A newer prompt means a turn is open or
   * has already run since, so this waiter must not wake the session.
   */
  promptId: string | null;
  /** The hook event that started the waiter (`SessionStart`, `Stop`, or null outside a hook). */
  event: string | null;
}

/** What one session's record holds (JSON, one file per session). */
export interface SessionState {
  /** SHA-256 of the last delivery text the session's context received. */
  delivered?: string;
  by?: DeliveredBy;
  /** Recent UserPromptSubmit `prompt_id`s, oldest first (Claude Code; woken turns get one too). */
  prompts?: string[];
  waiter?: WaiterRecord;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function sessionDir(home: string): string {
  return join(home, 'hook-sessions');
}

/** The record's file name (a hash: session ids come from the client and are not trusted as paths). */
export function sessionFileName(key: SessionKey): string {
  return `${sha256(JSON.stringify([key.client, key.agent, key.sessionId]))}.json`;
}

function statePath(key: SessionKey): string {
  return join(sessionDir(key.home), sessionFileName(key));
}

/** The session's record ({} when missing or unreadable: the memory only saves bytes). */
export function readSessionState(key: SessionKey): SessionState {
  try {
    const value = JSON.parse(readFileSync(statePath(key), 'utf8')) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as SessionState)
      : {};
  } catch {
    return {};
  }
}

function writeState(key: SessionKey, state: SessionState): void {
  const path = statePath(key);
  mkdirSync(sessionDir(key.home), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temp, JSON.stringify(state), { mode: 0o600 });
    renameSync(temp, path);
  } catch (err) {
    // A full disk leaves a partial (often empty) temp file: nothing else would ever remove it.
    rmSync(temp, { force: true });
    throw err;
  }
}

/** A lock older than this was left by a killed process (holders keep it for milliseconds). */
const STALE_LOCK_MS = 5_000;
const LOCK_WAIT_MS = 2_000;

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Runs `fn` on the session's record while holding its lock file (O_EXCL), so the hooks and the
 * waiters of one session never both decide to deliver the same slice. Returns `fallback` when the
 * folder cannot be written (the memory is a cache: delivery goes on without it).
 */
function withSessionLock<T>(key: SessionKey, fallback: T, fn: (state: SessionState) => T): T {
  const lock = `${statePath(key)}.lock`;
  try {
    mkdirSync(sessionDir(key.home), { recursive: true, mode: 0o700 });
  } catch {
    return fallback;
  }
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      closeSync(openSync(lock, 'wx', 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return fallback;
      try {
        if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) rmSync(lock, { force: true });
      } catch {
        // Released meanwhile.
      }
      if (Date.now() > deadline) return fallback;
      sleepSync(5);
    }
  }
  try {
    return fn(readSessionState(key));
  } finally {
    rmSync(lock, { force: true });
  }
}

/** True when this session was already given exactly `text` and its context still holds it. */
export function alreadyDelivered(key: SessionKey, text: string, source: string | null): boolean {
  if (source !== null && CONTEXT_RESET_SOURCES.has(source)) return false;
  return readSessionState(key).delivered === sha256(text);
}

/** Records `text` as the session's latest delivery (atomic replace; a failure is ignored). */
export function rememberDelivery(
  key: SessionKey,
  text: string,
  by: DeliveredBy = 'user-prompt-submit',
): void {
  try {
    withSessionLock(key, undefined, (state) => writeState(key, { ...state, delivered: sha256(text), by }));
  } catch {
    // The memory only saves bytes; the delivery itself already happened.
  }
}

/**
 * A hook's delivery decision, atomic with the waiters': true (and recorded) when `text` should be
 * handed over now; false when the session already holds it. `source` is SessionStart's source.
 */
export function claimHookDelivery(
  key: SessionKey,
  text: string,
  source: string | null,
  by: DeliveredBy,
): boolean {
  const digest = sha256(text);
  const reset = source !== null && CONTEXT_RESET_SOURCES.has(source);
  try {
    return withSessionLock(key, true, (state) => {
      if (!reset && state.delivered === digest) return false;
      writeState(key, { ...state, delivered: digest, by });
      return true;
    });
  } catch {
    return true;
  }
}

/** How many prompt ids a record keeps: enough to tell an ended turn's prompt from a newer one. */
const RECENT_PROMPTS = 20;

const latestPrompt = (state: SessionState): string | null => state.prompts?.at(-1) ?? null;

function withPrompt(state: SessionState, promptId: string): SessionState {
  const prompts = state.prompts ?? [];
  if (prompts.includes(promptId)) return state;
  return { ...state, prompts: [...prompts, promptId].slice(-RECENT_PROMPTS) };
}

/** Notes a submitted prompt (UserPromptSubmit): waiters started before it step aside. */
export function notePrompt(key: SessionKey, promptId: string): void {
  try {
    withSessionLock(key, undefined, (state) => {
      const next = withPrompt(state, promptId);
      if (next !== state) writeState(key, next);
    });
  } catch {
    // Without the note an older waiter may still wake once; nothing is lost.
  }
}

/**
 * Makes the calling process the session's only waiter (older ones see it and end). `promptId` is
 * the Stop hook's prompt, or undefined to take the record's current one (SessionStart).
 */
export function registerWaiter(
  key: SessionKey,
  promptId: string | null | undefined,
  event: string | null,
): WaiterRecord {
  const token = randomBytes(12).toString('hex');
  let record: WaiterRecord = { token, pid: process.pid, promptId: promptId ?? null, event };
  withSessionLock(key, undefined, (state) => {
    // A Stop hook's prompt the record never saw (its prompt hook did not run) becomes the latest;
    // one it saw followed by newer ones leaves this waiter obsolete from the start.
    const next = promptId ? withPrompt(state, promptId) : state;
    record = { token, pid: process.pid, promptId: promptId ? promptId : latestPrompt(next), event };
    writeState(key, { ...next, waiter: record });
  });
  return record;
}

/**
 * Why a waiter must end without waking: a newer waiter replaced it, or a newer prompt opened a
 * turn (which will start its own waiter when it stops). Null while it may still wake.
 */
export function waiterObsolete(
  state: SessionState,
  waiter: WaiterRecord,
): 'superseded' | 'turn-started' | null {
  if (state.waiter?.token !== waiter.token) return 'superseded';
  if (latestPrompt(state) !== waiter.promptId) return 'turn-started';
  return null;
}

/**
 * The wake decision for `text` (the slice the waiter would hand over):
 * - `wake`: deliver it now (recorded, so no other waiter or hook sends it again);
 * - `notice`: the session-start hook already put exactly this slice into the context of a
 *   session that has not run a turn yet — wake with a short pointer, not the slice a second time;
 * - `held`: the session already holds this slice; wait for the inbox to change;
 * - `superseded` / `turn-started`: end quietly.
 */
export function claimWake(
  key: SessionKey,
  text: string,
  waiter: WaiterRecord,
): 'wake' | 'notice' | 'held' | 'superseded' | 'turn-started' {
  const digest = sha256(text);
  return withSessionLock(key, 'held' as const, (state) => {
    const obsolete = waiterObsolete(state, waiter);
    if (obsolete !== null) return obsolete;
    if (state.delivered === digest) {
      if (state.by !== 'session-start' || waiter.event !== 'SessionStart') return 'held';
      writeState(key, { ...state, by: 'wake' });
      return 'notice';
    }
    writeState(key, { ...state, delivered: digest, by: 'wake' });
    return 'wake';
  });
}

/** Sessions older than this are forgotten (the memory only saves a repeated delivery). */
export const SESSION_MEMORY_MAX_AGE_MS = 14 * 24 * 3600_000;

/**
 * Removes session records not touched for `maxAgeMs`, so the folder does not grow with every
 * session ever started. Called once per session start; failures are ignored.
 */
export function forgetOldSessions(
  home: string,
  now = Date.now(),
  maxAgeMs = SESSION_MEMORY_MAX_AGE_MS,
): void {
  const dir = sessionDir(home);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    try {
      const path = join(dir, name);
      if (now - statSync(path).mtimeMs > maxAgeMs) rmSync(path, { force: true });
    } catch {
      // Another hook may have replaced or removed it meanwhile.
    }
  }
}
