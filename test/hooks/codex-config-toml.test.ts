// `hooks install codex` edits a user's config.toml. It used to be line-based only: a config whose
// servers are an inline table (`mcp_servers = { … }`) came out invalid (a `[mcp_servers.sluice]`
// table cannot extend an inline table), and an invalid file was overwritten as if it were fine.
// Now the file is parsed first (invalid: one coded line naming the file and line, nothing
// written), an inline `mcp_servers` is handled, and the result is checked to mean what the user's
// file meant plus the sluice server.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { afterEach, describe, expect, test } from 'vitest';
import { codexMcpBlock, mergeCodexConfig, planCodexInstall } from '../../src/surfaces/hooks/install-codex.js';

const launcher = { node: '/usr/bin/node', bin: '/opt/sluice/bin/sluice.js' };
const store = { home: '/home/me/.sluice', db: undefined };
const BLOCK = codexMcpBlock(launcher, 'bot', store);
const SLUICE = (parse(BLOCK) as { mcp_servers: { sluice: unknown } }).mcp_servers.sluice;

const PROVIDER_ONLY = [
  'model = "scripted"',
  'model_provider = "local"',
  '',
  '[model_providers.local]',
  'name = "local"',
  'base_url = "http://127.0.0.1:9/v1"',
  '',
].join('\n');

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: the parsed TOML is inspected key by key.
const parsed = (text: string): any => parse(text);

describe('mergeCodexConfig keeps what the user wrote', () => {
  test('a provider-only config gains the sluice server and keeps every line', () => {
    const merged = mergeCodexConfig(PROVIDER_ONLY, BLOCK, 'config.toml');
    expect(merged.startsWith(PROVIDER_ONLY.trimEnd())).toBe(true);
    expect(parsed(merged)).toEqual({ ...parsed(PROVIDER_ONLY), mcp_servers: { sluice: SLUICE } });
  });

  test('an inline mcp_servers table keeps its servers and gains sluice, in valid TOML', () => {
    const before = [
      'model = "scripted"',
      'mcp_servers = { docs = { command = "docs-server", args = ["--port", "1"] }, "x y" = { url = "http://h" } }',
      '',
      '[model_providers.local]',
      'name = "local"',
      '',
    ].join('\n');
    const merged = mergeCodexConfig(before, BLOCK, 'config.toml');
    const after = parsed(merged);
    const { mcp_servers, ...rest } = parsed(before);
    expect(after).toEqual({ ...rest, mcp_servers: { ...mcp_servers, sluice: SLUICE } });
    // Installing again changes nothing.
    expect(mergeCodexConfig(merged, BLOCK, 'config.toml')).toBe(merged);
  });

  test('an inline mcp_servers that already holds sluice gets it replaced', () => {
    const before = 'mcp_servers = { sluice = { command = "old" }, docs = { command = "d" } }\n';
    const after = parsed(mergeCodexConfig(before, BLOCK, 'config.toml'));
    expect(after).toEqual({ mcp_servers: { docs: { command: 'd' }, sluice: SLUICE } });
  });

  test('invalid TOML is one coded line naming the file and line', () => {
    const bad = 'model = "scripted"\nmodel_provider = "local\n';
    expect(() => mergeCodexConfig(bad, BLOCK, '/u/.codex/config.toml')).toThrow(
      expect.objectContaining({
        code: 'invalid_params',
        message: expect.stringMatching(
          /^\/u\/\.codex\/config\.toml is not valid TOML \(line 2[^\n]*nothing was changed/,
        ),
      }),
    );
  });

  test('planCodexInstall leaves an invalid file as it is', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-codex-toml-'));
    dirs.push(dir);
    const bad = '[model_providers.local\nname = "x"\n';
    writeFileSync(join(dir, 'config.toml'), bad);
    expect(() => planCodexInstall({ agent: 'bot', codexDir: dir, store, launcher })).toThrow(
      /config\.toml is not valid TOML \(line 1/,
    );
    expect(readFileSync(join(dir, 'config.toml'), 'utf8')).toBe(bad);
  });
});

describe('hooks uninstall codex', () => {
  test('leaves an invalid config.toml as it is, naming its line', async () => {
    const { planCodexUninstall } = await import('../../src/surfaces/hooks/uninstall.js');
    const dir = mkdtempSync(join(tmpdir(), 'sluice-codex-toml-'));
    dirs.push(dir);
    const bad = `${BLOCK}\nmodel = \n`;
    writeFileSync(join(dir, 'config.toml'), bad);
    const line = BLOCK.split('\n').length + 1;
    expect(() => planCodexUninstall(dir)).toThrow(`config.toml is not valid TOML (line ${line},`);
    expect(readFileSync(join(dir, 'config.toml'), 'utf8')).toBe(bad);
  });
});
