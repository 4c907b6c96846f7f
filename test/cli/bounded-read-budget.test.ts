import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAIN_RECEIPT_BYTES, receiptBytes } from '../../src/core/output-cap.js';
import { boundedMessagePart, defaultReadBudget } from '../../src/surfaces/cli/bounded-read.js';
import { boundedMessagePage } from '../../src/surfaces/cli/message-page.js';
import { runCliHere } from '../support/cli-in-process.js';
import { runCli, tempHome } from '../support/host.js';
import { commands, row } from './bounded-read-fixtures.js';

describe('the default budget of a model read follows the client cap in bytes', () => {
  it('is the cap less 16 receipts: of Codex exec_command 10,000 bytes under Codex, else of Claude Code Bash 30,000 bytes', () => {
    const room = 16 * PLAIN_RECEIPT_BYTES;
    expect(defaultReadBudget({ CODEX_THREAD_ID: 't' })).toEqual({
      chars: 18_000,
      bytes: 10_000 - room,
      cap: 10_000,
    });
    // Outside a model's shell there is no receipt chain to size the next page for.
    expect(defaultReadBudget({})).toEqual({ chars: 30_000 - room, bytes: 30_000 - room });
    expect(defaultReadBudget({ CLAUDECODE: '1' })).toEqual({
      chars: 30_000 - room,
      bytes: 30_000 - room,
      cap: 30_000,
    });
  });

  it('bounds pages and parts in UTF-8 bytes: CJK bodies within the characters would not fit', () => {
    const budget = { chars: 18_000, bytes: 6_000 };
    const rows = Array.from({ length: 6 }, (_, i) => row(`M${i}`, '語'.repeat(1_000)));
    const page = boundedMessagePage(rows, false, budget, commands);
    expect(Buffer.byteLength(page.text)).toBeLessThanOrEqual(6_000);
    // One whole, then as much of the next as fits.
    expect(page.count).toBe(2);
    const [, cut] = JSON.parse(page.text).messages;
    expect(cut.part).toEqual({ offset: 0, total: 1_000 });
    expect(Buffer.byteLength(page.text)).toBeGreaterThan(6_000 - 4);
    const part = boundedMessagePart(row('M1', '語'.repeat(5_000)), 0, budget, commands);
    expect(Buffer.byteLength(part)).toBeLessThanOrEqual(6_000);
    expect(JSON.parse(part).part).toEqual({ offset: 0, total: 5_000 });
  });
});

describe('message ls and read under Codex print within its output cap', { timeout: 120_000 }, () => {
  const { home, cleanup } = tempHome();
  const bodies = Array.from({ length: 4 }, (_, i) => `${i}:${'段'.repeat(1_500)}`);
  const ids: string[] = [];
  const codex = { CODEX_THREAD_ID: '01a22cff-2e59-7b51-9df3-44d78b6a7d95' };
  // In this process; the first page under Codex through the built launcher, which finds
  // CODEX_THREAD_ID in the environment it inherits.
  const ok = async (
    args: string[],
    env: Record<string, string> = {},
    input?: string,
    run: typeof runCli = runCliHere,
  ) => {
    const r = await run(args, {
      home,
      env: { CODEX_THREAD_ID: '', ...env },
      ...(input !== undefined ? { input } : {}),
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return r.stdout;
  };
  beforeAll(async () => {
    await ok(['init']);
    await ok(['agent', 'add', 'bot']);
    for (const body of bodies) ids.push((await ok(['message', 'send', 'bot', '-m', '-'], {}, body)).trim());
  }, 60_000);
  afterAll(cleanup);

  it('walks every body with each page and the receipts of the page before it within 10,000 bytes, each page filled', async () => {
    const seen: string[] = [];
    const joined = new Map<string, string>();
    let next: string | null = 'sluice message ls --json --include-body';
    let receipts = 16 * PLAIN_RECEIPT_BYTES;
    for (let pages = 0; next !== null; pages++) {
      const out = await ok(
        [...next.split(' ').slice(1), '--as', 'bot'],
        codex,
        undefined,
        pages === 0 ? runCli : runCliHere,
      );
      const budget = 10_000 - receipts;
      expect(Buffer.byteLength(out)).toBeLessThanOrEqual(budget);
      const page = JSON.parse(out) as {
        messages: { id: string; body: string; part?: { offset: number; total: number } }[];
        next: string | null;
      };
      // Only a body whose last part is here is handled (and prints a receipt before the next page).
      const handled: string[] = [];
      for (const m of page.messages) {
        const body = (joined.get(m.id) ?? '') + m.body;
        if (m.part !== undefined && body.length < m.part.total) {
          joined.set(m.id, body);
          continue;
        }
        joined.delete(m.id);
        expect(body).toBe(bodies[ids.indexOf(m.id)]);
        handled.push(m.id);
      }
      seen.push(...handled);
      receipts = handled.reduce((n, id) => n + receiptBytes(id), 0);
      if (page.next !== null) {
        expect(page.next).toContain(` --max-bytes ${10_000 - receipts}`);
        // Filled: what is left is less than a short part and its row's headers.
        expect(budget - Buffer.byteLength(out)).toBeLessThan(1_400);
      }
      next = page.next;
    }
    expect(seen).toEqual(ids);
    // Outside Codex the same listing fits Claude Code's larger cap in one page.
    const whole = JSON.parse(await ok(['message', 'ls', '--json', '--include-body', '--as', 'bot']));
    expect(whole.messages).toHaveLength(4);
  });
  it('--max-bytes bounds a page in a terminal and repeats in next; a budget under 2,000 is refused with one line', async () => {
    const out = await ok(['message', 'ls', '--json', '--include-body', '--max-bytes', '5000', '--as', 'bot']);
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(5_000);
    expect(JSON.parse(out).next).toBe(
      `sluice message ls --json --include-body --since ${ids[0]} --max-bytes 5000 --as bot`,
    );
    const r = await runCliHere(
      ['message', 'ls', '--json', '--include-body', '--max-bytes', '100', '--as', 'bot'],
      {
        home,
      },
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('--max-bytes must be at least 2000');
  });
});
