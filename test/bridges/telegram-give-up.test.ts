// What a paired person is told when the bridge gives an update up: the fault in words for them,
// never a program's error text (a TypeError's message named the bridge's own variables).
import { GrammyError } from 'grammy';
import type { Update } from 'grammy/types';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { FaultCounts } from '../../src/surfaces/bridges/telegram/faults.js';
import { handleWithRetry } from '../../src/surfaces/bridges/telegram/update-retry.js';

async function giveUpOn(fault: unknown): Promise<{ told: string; logs: string[] }> {
  const logs: string[] = [];
  let told = '';
  const confirmed = await handleWithRetry({ update_id: 9 } as Update, {
    handle: () => Promise.reject(fault),
    signal: new AbortController().signal,
    policy: { updateAttempts: 2, firstDelayMs: 0, maxDelayMs: 0 },
    counts: new FaultCounts(),
    log: (line) => logs.push(line),
    onAbandon: async (_u, cause) => {
      told = cause;
    },
  });
  expect(confirmed).toBe(true);
  return { told, logs };
}

describe('an update the bridge gives up on', () => {
  it('a program error: the person hears it was the host, the log keeps the error', async () => {
    const { told, logs } = await giveUpOn(
      new TypeError("Cannot read properties of undefined (reading 'startsWith')"),
    );
    expect(told).toBe('an error on the host; its log says more');
    expect(logs.at(-1)).toMatch(/gave up after 2 tries: Cannot read properties of undefined/);
  });

  it('Telegram failing: the person hears Telegram failed, with its code', async () => {
    const err = new GrammyError(
      'Call to sendMessage failed!',
      { ok: false, error_code: 502, description: 'Bad Gateway' },
      'sendMessage',
      {},
    );
    const { told } = await giveUpOn(err);
    expect(told).toBe('Telegram kept failing: 502 Bad Gateway');
  });

  it("a Sluice refusal: the person hears Sluice's one line", async () => {
    const { told } = await giveUpOn(
      new SluiceError('too_large', 'the body is over 65,536 UTF-16 code units'),
    );
    expect(told).toBe('too_large: the body is over 65,536 UTF-16 code units');
  });
});
