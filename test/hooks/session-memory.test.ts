import { mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  alreadyDelivered,
  claimHookDelivery,
  claimWake,
  forgetOldSessions,
  notePrompt,
  registerWaiter,
  rememberDelivery,
  SESSION_MEMORY_MAX_AGE_MS,
  sessionFileName,
} from '../../src/surfaces/hooks/session-memory.js';
import { tempHome } from '../support/host.js';

const homes: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of homes.splice(0)) cleanup();
});
function home(): string {
  const { home: dir, cleanup } = tempHome('sluice-session-memory-');
  homes.push(cleanup);
  return dir;
}

test('a session remembers only its latest delivery, per client and agent', () => {
  const dir = home();
  const key = { home: dir, client: 'claude', agent: 'bot', sessionId: 's1' };
  expect(alreadyDelivered(key, 'A', 'startup')).toBe(false);
  rememberDelivery(key, 'A');
  expect(alreadyDelivered(key, 'A', null)).toBe(true);
  expect(alreadyDelivered(key, 'B', null)).toBe(false);
  expect(alreadyDelivered({ ...key, client: 'codex' }, 'A', null)).toBe(false);
  expect(alreadyDelivered({ ...key, agent: 'other' }, 'A', null)).toBe(false);
  expect(alreadyDelivered(key, 'A', 'compact')).toBe(false);
  expect(alreadyDelivered(key, 'A', 'clear')).toBe(false);
  rememberDelivery(key, 'B');
  expect(alreadyDelivered(key, 'A', null)).toBe(false);
});

test('session records untouched for two weeks are forgotten, recent ones kept', () => {
  const dir = home();
  rememberDelivery({ home: dir, client: 'claude', agent: 'bot', sessionId: 'recent' }, 'x');
  mkdirSync(join(dir, 'hook-sessions'), { recursive: true });
  const old = join(dir, 'hook-sessions', 'old.sha256');
  writeFileSync(old, 'y');
  const past = (Date.now() - SESSION_MEMORY_MAX_AGE_MS - 60_000) / 1000;
  utimesSync(old, past, past);
  forgetOldSessions(dir);
  expect(readdirSync(join(dir, 'hook-sessions'))).toHaveLength(1);
  expect(readdirSync(join(dir, 'hook-sessions'))).not.toContain('old.sha256');
  forgetOldSessions(join(dir, 'missing'));
});

describe('the wake shares the record', () => {
  const key = (dir: string) => ({ home: dir, client: 'claude', agent: 'bot', sessionId: 'w' });

  test('a slice is handed over once, whoever claims it first (hook or waiter)', () => {
    const k = key(home());
    const waiter = registerWaiter(k, 'p1', 'Stop');
    expect(claimWake(k, 'SLICE', waiter)).toBe('wake');
    expect(claimWake(k, 'SLICE', waiter)).toBe('held');
    expect(claimHookDelivery(k, 'SLICE', null, 'user-prompt-submit')).toBe(false);
    expect(claimHookDelivery(k, 'SLICE+1', null, 'user-prompt-submit')).toBe(true);
    expect(claimWake(k, 'SLICE+1', waiter)).toBe('held');
  });

  test('only the newest waiter wakes, and none from before a newer prompt', () => {
    const k = key(home());
    const older = registerWaiter(k, 'p1', 'Stop');
    const newer = registerWaiter(k, 'p1', 'Stop');
    expect(claimWake(k, 'A', older)).toBe('superseded');
    notePrompt(k, 'p2');
    expect(claimWake(k, 'A', newer)).toBe('turn-started');
    // The Stop of the turn that answered p2 starts a waiter that may wake again.
    expect(claimWake(k, 'A', registerWaiter(k, 'p2', 'Stop'))).toBe('wake');
    // A Stop for a prompt older than the latest is obsolete from the start.
    expect(claimWake(k, 'B', registerWaiter(k, 'p1', 'Stop'))).toBe('turn-started');
  });

  test('at session start, a slice the session-start hook added is announced once, not sent again', () => {
    const k = key(home());
    expect(claimHookDelivery(k, 'S', 'startup', 'session-start')).toBe(true);
    const waiter = registerWaiter(k, undefined, 'SessionStart');
    expect(claimWake(k, 'S', waiter)).toBe('notice');
    expect(claimWake(k, 'S', waiter)).toBe('held');
  });
});

test('a record that cannot be written (here: its path is a folder) leaves no temp file behind', () => {
  const dir = home();
  const key = { home: dir, client: 'claude', agent: 'bot', sessionId: 's1' };
  // The record's path taken by a non-empty folder: the temp file is written, the rename fails,
  // as a full disk fails the write after the temp file was created.
  mkdirSync(join(dir, 'hook-sessions', sessionFileName(key), 'x'), { recursive: true });
  rememberDelivery(key, 'A');
  expect(claimHookDelivery(key, 'B', null, 'user-prompt-submit')).toBe(true);
  expect(readdirSync(join(dir, 'hook-sessions')).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  expect(alreadyDelivered(key, 'A', null)).toBe(false);
});
