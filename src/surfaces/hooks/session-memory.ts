// Claude Code and Codex fire SessionStart and then UserPromptSubmit before the first model call,
// and both keep earlier hook context in the conversation. Remembering, per session, the last text
// handed over lets a hook skip a delivery the model already holds (same pending slice, same
// counts) instead of doubling the request. This is a cache beside the store, never inbox state:
// losing it only means one repeated delivery.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** SessionStart sources after which the model no longer holds earlier context. */
const CONTEXT_RESET_SOURCES = new Set(['clear', 'compact']);

export interface SessionKey {
  home: string;
  client: string;
  agent: string;
  sessionId: string;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function memoryPath(key: SessionKey): string {
  const name = sha256(JSON.stringify([key.client, key.agent, key.sessionId]));
  return join(key.home, 'hook-sessions', `${name}.sha256`);
}

/** True when this session was already given exactly `text` and its context still holds it. */
export function alreadyDelivered(key: SessionKey, text: string, source: string | null): boolean {
  if (source !== null && CONTEXT_RESET_SOURCES.has(source)) return false;
  try {
    return readFileSync(memoryPath(key), 'utf8') === sha256(text);
  } catch {
    return false;
  }
}

/** Records `text` as the session's latest delivery (atomic replace; a failure is ignored). */
export function rememberDelivery(key: SessionKey, text: string): void {
  const path = memoryPath(key);
  try {
    mkdirSync(join(key.home, 'hook-sessions'), { recursive: true, mode: 0o700 });
    const temp = `${path}.${process.pid}.tmp`;
    writeFileSync(temp, sha256(text), { mode: 0o600 });
    renameSync(temp, path);
  } catch {
    // The memory only saves bytes; the delivery itself already happened.
  }
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
  const dir = join(home, 'hook-sessions');
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
