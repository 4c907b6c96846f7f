import { mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import {
  alreadyDelivered,
  forgetOldSessions,
  rememberDelivery,
  SESSION_MEMORY_MAX_AGE_MS,
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
