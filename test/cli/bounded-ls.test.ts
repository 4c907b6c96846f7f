import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliHere } from '../support/cli-in-process.js';
import { runCli, tempHome } from '../support/host.js';

// A model's read through the CLI (run in this process; a refusal's exit code through the built
// launcher): within Claude Code's 30,000-character Bash output cap.
describe('bounded model reads through the CLI', { timeout: 300_000 }, () => {
  const { home, cleanup } = tempHome();
  const ok = async (args: string[], input?: string) => {
    // Not under Codex, even when the tests run in a Codex session (its budget is smaller).
    const env = { CODEX_THREAD_ID: '' };
    const r = await runCliHere(args, { home, env, ...(input !== undefined ? { input } : {}) });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return r.stdout;
  };
  const ids: string[] = [];
  const bodies: string[] = [];

  beforeAll(async () => {
    await ok(['init']);
    await ok(['agent', 'add', 'bot']);
    // 20 bodies of 5 KB: unbounded, the listing was 103,802 bytes.
    for (let i = 0; i < 20; i++) {
      const body = `${i}:${'y'.repeat(5000)}`;
      bodies.push(body);
      ids.push((await ok(['message', 'send', 'bot', '-m', '-'], body)).trim());
    }
  }, 240_000);
  afterAll(cleanup);

  it('ls --include-body prints at most 30,000 characters and its next command visits every message once', async () => {
    const seen: string[] = [];
    const joined = new Map<string, string>();
    let next: string | null = 'sluice message ls --json --include-body';
    let pages = 0;
    while (next !== null) {
      const args = next.split(' ').slice(1).concat(['--as', 'bot']);
      const out = await ok(args);
      expect(out.length).toBeLessThanOrEqual(30_000);
      const page = JSON.parse(out);
      expect(Object.keys(page).at(-1)).toBe('next');
      for (const m of page.messages) {
        // A body that does not fit whole is split across pages: joined, it is the stored one.
        const body = (joined.get(m.id) ?? '') + m.body;
        if (m.part !== undefined && body.length < m.part.total) {
          joined.set(m.id, body);
          continue;
        }
        joined.delete(m.id);
        expect(body).toBe(bodies[ids.indexOf(m.id)]);
        seen.push(m.id);
      }
      next = page.next;
      pages++;
    }
    expect(seen).toEqual(ids);
    // The default read is Claude Code's 30,000-byte cap less room for 16 receipts (27,680 bytes,
    // src/core/output-cap.ts), each page filled: 100 KB in 4 pages.
    expect(pages).toBe(4);
  });

  it('text ls --include-body is bounded too, with whole entries and a last line naming the command that continues', async () => {
    const out = await ok(['message', 'ls', '--as', 'bot', '--include-body']);
    expect(out.length).toBeLessThanOrEqual(30_000);
    const lines = out.trimEnd().split('\n');
    const shown = ids.filter((id) => out.includes(id));
    expect(shown).toEqual(ids.slice(0, shown.length));
    expect(shown.length).toBeGreaterThan(0);
    for (const id of shown) expect(out).toContain(bodies[ids.indexOf(id)]);
    expect(lines.at(-1)).toBe(
      `next: sluice message ls --json --include-body --since ${shown.at(-1)} --as bot`,
    );
  });

  it('read --json of a body larger than the budget comes in lossless parts', async () => {
    const big = `${'😀"\\'.repeat(5000)}end`;
    const id = (await ok(['message', 'send', 'bot', '-m', '-'], big)).trim();
    let next: string | null = `sluice message read ${id} --json --max-chars 8000`;
    let body = '';
    while (next !== null) {
      const out = await ok(next.split(' ').slice(1).concat(['--as', 'bot']));
      expect(out.length).toBeLessThanOrEqual(8000);
      const part = JSON.parse(out);
      expect(part).toMatchObject({ id, from: 'owner', part: { offset: body.length, total: big.length } });
      body += part.body;
      next = part.next;
    }
    expect(body).toBe(big);
  });

  it('refuses a budget too small with one line', async () => {
    const r = await runCli(
      ['message', 'ls', '--as', 'bot', '--json', '--include-body', '--max-chars', '10'],
      {
        home,
      },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('sluice: invalid_params: --max-chars must be at least 2000\n');
  });
});
