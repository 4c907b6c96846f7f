// The Telegram bridge's small rules, without a server: replies fit Telegram's limit, unpaired
// chats are answered within the allowance, and only https:// or a loopback http:// root is used.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { isWellFormed } from '../../src/core/text.js';
import { checkedApiRoot, isLoopbackHost } from '../../src/surfaces/bridges/telegram/api-root.js';
import {
  echoName,
  fitText,
  STRANGER_LINE_EVERY_MS,
  STRANGER_LINES_PER_MINUTE,
  StrangerGate,
  TELEGRAM_TEXT_LIMIT,
} from '../../src/surfaces/bridges/telegram/replies.js';

describe('reply text', () => {
  it('fits any text within 4,096 units, cut on a code point, unchanged when it fits', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 5000 }),
        fc.integer({ min: 0, max: 10 }),
        (s, n) => {
          const text = s.repeat(n);
          const fitted = fitText(text);
          expect(fitted.length).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT);
          expect(isWellFormed(fitted)).toBe(true);
          if (text.length <= TELEGRAM_TEXT_LIMIT) expect(fitted).toBe(text);
          else {
            expect(fitted.endsWith('…')).toBe(true);
            expect(text.startsWith(fitted.slice(0, -1))).toBe(true);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('echoes at most 64 units of a typed name, whole code points', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), (name) => {
        const echoed = echoName(name);
        expect(echoed.length).toBeLessThanOrEqual(65);
        expect(isWellFormed(echoed)).toBe(true);
        expect(name.startsWith(echoed.replace(/…$/, ''))).toBe(true);
      }),
    );
    expect(echoName('helper')).toBe('helper');
  });
});

describe('the gate for unpaired chats', () => {
  it('lets a chat have its line once an hour', () => {
    let now = 0;
    const gate = new StrangerGate(() => now);
    expect(gate.admit('a', true).verdict).toBe('send');
    gate.answered('a');
    expect(gate.admit('a', true).verdict).toBe('repeat');
    expect(gate.admit('b', true).verdict).toBe('send');
    now += STRANGER_LINE_EVERY_MS - 1;
    expect(gate.admit('a', true).verdict).toBe('repeat');
    now += 1;
    expect(gate.admit('a', true).verdict).toBe('send');
  });

  it('a chat whose line failed to go out may try again', () => {
    const gate = new StrangerGate(() => 0);
    expect(gate.admit('a', true).verdict).toBe('send');
    expect(gate.admit('a', true).verdict).toBe('send');
  });

  it('answers at most the per-minute allowance, reports the first refusal of a window once, and refills', () => {
    let now = 1_000_000;
    const gate = new StrangerGate(() => now);
    const verdicts = Array.from({ length: STRANGER_LINES_PER_MINUTE + 5 }, (_, i) =>
      gate.admit(`c${i}`, false),
    );
    expect(verdicts.filter((v) => v.verdict === 'send')).toHaveLength(STRANGER_LINES_PER_MINUTE);
    expect(verdicts.filter((v) => v.verdict === 'busy').map((v) => v.first)).toEqual([
      true,
      false,
      false,
      false,
      false,
    ]);
    now += 60_000;
    expect(gate.admit('late', false).verdict).toBe('send');
  });

  it('remembers a bounded number of chats, forgetting the oldest', () => {
    let now = 0;
    const gate = new StrangerGate(() => now);
    for (let i = 0; i <= 10_000; i++) gate.answered(`c${i}`);
    now += 1;
    // c0 was forgotten (it may be answered again); the newest are still remembered.
    expect(gate.admit('c0', true).verdict).toBe('send');
    expect(gate.admit('c10000', true).verdict).toBe('repeat');
  });
});

describe('the API root', () => {
  it.each([
    ['https://api.telegram.org', 'https://api.telegram.org'],
    ['https://api.telegram.org/', 'https://api.telegram.org'],
    ['http://127.0.0.1:8081', 'http://127.0.0.1:8081'],
    ['http://127.9.9.9:8081', 'http://127.9.9.9:8081'],
    ['http://localhost:8081', 'http://localhost:8081'],
    ['http://[::1]:8081', 'http://[::1]:8081'],
    ['https://10.0.0.5:8443', 'https://10.0.0.5:8443'],
  ])('uses %s', (root, used) => {
    expect(checkedApiRoot(root)).toBe(used);
  });

  it('defaults to Telegram', () => {
    expect(checkedApiRoot(undefined)).toBe('https://api.telegram.org');
  });

  it.each([
    ['http://api.telegram.org', /plain http:\/\//],
    ['http://10.0.0.5:8081', /plain http:\/\//],
    ['http://192.168.1.2', /plain http:\/\//],
    ['http://[fd00::2]:8081', /plain http:\/\//],
    ['http://127.0.0.1.evil.example', /plain http:\/\//],
    ['ftp://127.0.0.1', /must be an https:\/\/ URL/],
    ['file:///etc/passwd', /must be an https:\/\/ URL/],
    ['https://user:pw@api.telegram.org', /plain URL/],
    ['not a url', /is not a URL/],
  ])('refuses %s with one line', (root, message) => {
    let caught: unknown;
    try {
      checkedApiRoot(root);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SluiceError);
    expect((caught as SluiceError).code).toBe('invalid_params');
    expect((caught as SluiceError).message).toMatch(message);
    expect((caught as SluiceError).message).not.toMatch(/\n/);
  });

  it('knows loopback hosts', () => {
    expect(isLoopbackHost('[::ffff:7f00:1]')).toBe(true);
    expect(isLoopbackHost('app.localhost')).toBe(true);
    expect(isLoopbackHost('128.0.0.1')).toBe(false);
    expect(isLoopbackHost('localhost.example')).toBe(false);
  });
});
