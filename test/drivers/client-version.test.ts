// The client version check before a driver starts its client (docs/drivers.md, "Supported
// clients"). The clients here are fake scripts that only answer `--version`: what is tested is the
// check itself — the real clients' runs are in test/e2e/drive-client-configs.e2e.test.ts.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  compareVersions,
  MIN_CLIENT_VERSION,
  parseClientVersion,
  requireClientVersion,
} from '../../src/surfaces/drivers/client-version.js';
import { runCliHere } from '../support/cli-in-process.js';
import { runCli, tempHome } from '../support/host.js';

describe('client version check', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-version-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A fake client whose `--version` prints `out` (stdout), `err` (stderr) and exits with `code`. */
  function fakeClient(name: string, out: string, code = 0, err = ''): string {
    const path = join(dir, name);
    writeFileSync(path, `#!/bin/sh\nprintf '%s' '${out}'\nprintf '%s' '${err}' >&2\nexit ${code}\n`);
    chmodSync(path, 0o755);
    return path;
  }

  test('reads the x.y.z of both clients’ version lines', () => {
    expect(parseClientVersion('codex-cli 0.171.0\n')).toEqual([0, 171, 0]);
    expect(parseClientVersion('2.1.332 (Claude Code)\n')).toEqual([2, 1, 332]);
    expect(parseClientVersion('codex-cli dev')).toBeUndefined();
  });

  test('compares versions numerically, part by part (an order: antisymmetric and consistent with sort)', () => {
    const version = fc.tuple(fc.nat(400), fc.nat(400), fc.nat(400));
    fc.assert(
      fc.property(version, version, (a, b) => {
        expect(Math.sign(compareVersions(a, b))).toBe(-Math.sign(compareVersions(b, a)));
        const byString = a.join('.') === b.join('.');
        expect(compareVersions(a, b) === 0).toBe(byString);
      }),
    );
    expect(compareVersions([0, 99, 9], [0, 150, 0])).toBeLessThan(0);
    expect(compareVersions([0, 150, 0], [0, 150, 0])).toBe(0);
    expect(compareVersions([1, 0, 0], [0, 171, 0])).toBeGreaterThan(0);
  });

  test('a client older than the minimum is refused with one line naming found and needed; the minimum passes', async () => {
    const old = fakeClient('codex-old', 'codex-cli 0.149.9\n');
    await expect(requireClientVersion('codex', old, process.env)).rejects.toMatchObject({
      code: 'not_found',
      message: `codex 0.149.9 is too old: sluice drive codex needs codex ${MIN_CLIENT_VERSION.codex} or newer (${old})`,
    });
    const min = fakeClient('codex-min', `codex-cli ${MIN_CLIENT_VERSION.codex}\n`);
    await expect(requireClientVersion('codex', min, process.env)).resolves.toBe(
      `codex-cli ${MIN_CLIENT_VERSION.codex}`,
    );
    const claude = fakeClient('claude-old', '2.1.300 (Claude Code)\n');
    await expect(requireClientVersion('claude', claude, process.env)).rejects.toMatchObject({
      code: 'not_found',
      message: `claude 2.1.300 is too old: sluice drive claude needs claude ${MIN_CLIENT_VERSION.claude} or newer (${claude})`,
    });
  });

  test('a --version that fails is reported with its own stderr line; a line with no version is let through', async () => {
    const broken = fakeClient(
      'codex-broken',
      '',
      3,
      'thread main panicked\nError: cannot load libssl.so.3\n',
    );
    await expect(requireClientVersion('codex', broken, process.env)).rejects.toMatchObject({
      code: 'unavailable',
      message: `${broken} --version exited (code 3): Error: cannot load libssl.so.3`,
    });
    const odd = fakeClient('codex-odd', 'codex-cli (development build)\n');
    await expect(requireClientVersion('codex', odd, process.env)).resolves.toBe(
      'codex-cli (development build)',
    );
  });

  test('sluice drive codex with a too-old codex prints that one line (exit 2) and starts nothing', async () => {
    const { home, cleanup } = tempHome();
    try {
      expect((await runCliHere(['init'], { home })).code).toBe(0);
      expect((await runCliHere(['agent', 'add', 'bot', '--settlement', 'turn'], { home })).code).toBe(0);
      const old = fakeClient('codex', 'codex-cli 0.120.0\n');
      const r = await runCli(['drive', 'codex', '--as', 'bot', '--cwd', dir], {
        home,
        env: { SLUICE_CODEX_BIN: old },
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(
        `sluice: not_found: codex 0.120.0 is too old: sluice drive codex needs codex ${MIN_CLIENT_VERSION.codex} or newer (${old})\n`,
      );
      expect(r.stdout).toBe('');
    } finally {
      cleanup();
    }
  });
});
