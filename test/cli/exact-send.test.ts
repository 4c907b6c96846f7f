import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliHere } from '../support/cli-in-process.js';
import { runCli, tempHome } from '../support/host.js';

// Retries and bytes exactly as the user gave them: the CLI in this process, and the built launcher
// (`npm test` builds first) for a conflict's exit code and bytes piped to a real stdin.
describe('message send and reply from the CLI: retried safely, text stored exactly or refused', () => {
  const { home, cleanup } = tempHome();
  const cli = (args: string[], input?: string | Uint8Array) =>
    runCliHere(args, { home, ...(input !== undefined ? { input } : {}) });
  const launcher = (args: string[], input?: string | Uint8Array) =>
    runCli(args, { home, ...(input !== undefined ? { input } : {}) });
  const ok = async (args: string[], input?: string | Uint8Array) => {
    const r = await cli(args, input);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return r.stdout.trim();
  };
  const bodies = async () =>
    (
      JSON.parse(
        await ok(['message', 'ls', '--as', 'bot', '--json', '--include-body', '--max-chars', '100000000']),
      ).messages as { body: string }[]
    ).map((r) => r.body);

  beforeAll(async () => {
    await ok(['init']);
    await ok(['agent', 'add', 'bot']);
  });
  afterAll(cleanup);

  it('prints the first id again for a retried send with the same --idempotency-key, storing it once', async () => {
    const args = ['message', 'send', 'bot', '-m', 'deploy', '--idempotency-key', 'cli-1'];
    const first = await ok(args);
    expect(await ok(args)).toBe(first);
    expect((await bodies()).filter((b) => b === 'deploy')).toHaveLength(1);
  });

  it('refuses the same key with another body as conflict (exit 1), storing nothing', async () => {
    const r = await launcher(['message', 'send', 'bot', '-m', 'deploy later', '--idempotency-key', 'cli-1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^sluice: conflict: idempotency_key was already used/);
    expect(await bodies()).not.toContain('deploy later');
  });

  it('makes message reply idempotent with --idempotency-key', async () => {
    const parent = await ok(['message', 'send', 'bot', '-m', 'question?']);
    const args = ['message', 'reply', parent, '--as', 'bot', '-m', 'answer', '--idempotency-key', 'r-1'];
    const first = await ok(args);
    expect(await ok(args)).toBe(first);
  });

  it('refuses an unprintable key as invalid_params', async () => {
    const r = await cli(['message', 'send', 'bot', '-m', 'x', '--idempotency-key', 'a\tb']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('idempotency_key must be 1-200 printable characters');
  });

  it('refuses a stdin body that is not UTF-8 instead of storing replacement characters', async () => {
    const before = await bodies();
    const bad = Buffer.concat([Buffer.from('caf'), Buffer.from([0xe9]), Buffer.from(' (Latin-1)')]);
    const r = await launcher(['message', 'send', 'bot', '-m', '-'], bad);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('sluice: invalid_params: body from stdin is not valid UTF-8; nothing was stored\n');
    expect(await bodies()).toEqual(before);
  });

  it('stores a UTF-8 stdin body byte for byte, BOM and all', async () => {
    const body = '\ufeff😀 naïve\u0000\r\nend';
    await ok(['message', 'send', 'bot', '-m', '-'], Buffer.from(body, 'utf8'));
    expect(await bodies()).toContain(body);
  });
});
