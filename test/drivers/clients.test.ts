import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { shellWord } from '../../src/core/shell-word.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { putMedia } from '../../src/host/media/media.js';
import { readProjection, sendMessage } from '../../src/host/messages/messages.js';
import { CLAUDE_ALLOWED_TOOLS, claudeArgs, claudeOutcome } from '../../src/surfaces/drivers/claude.js';
import { codexOutcome } from '../../src/surfaces/drivers/codex.js';
import { codexArgs } from '../../src/surfaces/drivers/codex-config.js';
import { claudeTurnContent, codexTurnInput } from '../../src/surfaces/drivers/content.js';
import { findClientBinary, prepareDriver } from '../../src/surfaces/drivers/setup.js';
import { openTestHost, type TestHost } from '../support/host.js';

describe('claudeOutcome', () => {
  test.each([
    [{ type: 'result', subtype: 'success', is_error: false }, { ok: true }],
    [
      {
        type: 'result',
        subtype: 'success',
        is_error: true,
        api_error_status: 529,
        result: 'API Error: 529 Overloaded',
      },
      { ok: false, kind: 'model_error', reason: 'API Error: 529 Overloaded' },
    ],
    [
      { type: 'result', subtype: 'success', is_error: true, terminal_reason: 'api_error', result: 'x' },
      { ok: false, kind: 'model_error', reason: 'x' },
    ],
    [
      { type: 'result', subtype: 'error_max_turns', is_error: true },
      { ok: false, kind: 'max_turns', reason: 'error_max_turns' },
    ],
    [
      { type: 'result', subtype: 'error_during_execution', is_error: true },
      { ok: false, kind: 'execution_error', reason: 'error_during_execution' },
    ],
    [
      { type: 'result', subtype: 'something_new' },
      { ok: false, kind: 'client_error', reason: 'something_new' },
    ],
  ] as const)('%j settles as %j', (result, outcome) => {
    expect(claudeOutcome(result)).toEqual(outcome);
  });
});

describe('codexOutcome', () => {
  test.each([
    [{ turn: { id: 't', status: 'completed', error: null } }, { ok: true }],
    [
      {
        turn: {
          id: 't',
          status: 'failed',
          error: { message: 'high demand', codexErrorInfo: 'internalServerError' },
        },
      },
      { ok: false, kind: 'model_error', reason: 'high demand' },
    ],
    [
      { turn: { id: 't', status: 'interrupted' } },
      { ok: false, kind: 'interrupted', reason: 'turn interrupted' },
    ],
  ] as const)('%j settles as %j', (params, outcome) => {
    expect(codexOutcome(params)).toEqual(outcome);
  });
});

describe('client configuration', () => {
  let h: TestHost;
  beforeEach(async () => {
    h = await openTestHost();
  });
  afterEach(async () => {
    await h.close();
  });

  test('the shim runs this CLI as the agent on this home, and the MCP config registers sluice mcp --as AGENT', async () => {
    const bot = await h.agent('bot', 'turn');
    const setup = await prepareDriver(h.ctx, bot, { entry: "/opt/it's/bin/sluice.js" });
    expect(setup.env).toMatchObject({ SLUICE_HOME: h.home, SLUICE_AS: 'bot' });
    expect(setup.env.PATH?.split(':')[0]).toBe(join(setup.dir, 'bin'));
    const shim = readFileSync(join(setup.dir, 'bin', 'sluice'), 'utf8');
    const lock = JSON.stringify({ agent: 'bot', home: h.home, attachRoots: [] });
    expect(shim).toBe(
      [
        '#!/bin/sh',
        `SLUICE_HOME=${shellWord(h.home)}; export SLUICE_HOME`,
        'SLUICE_AS=bot; export SLUICE_AS',
        // The home's own file by its path: a SLUICE_DB the model's shell inherits never wins.
        `SLUICE_DB=${shellWord(join(h.home, 'sluice.db'))}; export SLUICE_DB`,
        `SLUICE_AGENT_LOCK='${lock}'; export SLUICE_AGENT_LOCK`,
        `exec ${shellWord(process.execPath)} '/opt/it'\\''s/bin/sluice.js' "$@"`,
        '',
      ].join('\n'),
    );
    expect(setup.env.SLUICE_AGENT_LOCK).toBe(lock);
    expect(statSync(setup.dir).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(setup.mcpConfigPath, 'utf8'))).toEqual({
      mcpServers: {
        sluice: {
          command: process.execPath,
          args: ["/opt/it's/bin/sluice.js", 'mcp', '--as', 'bot'],
          env: { SLUICE_HOME: h.home, SLUICE_AS: 'bot', SLUICE_DB: join(h.home, 'sluice.db') },
        },
      },
    });
    const args = claudeArgs(setup, ['--model', 'x']);
    expect(args.slice(0, 6)).toEqual([
      '-p',
      '--input-format',
      'stream-json',
      '--output-format',
      'stream-json',
      '--verbose',
    ]);
    expect(args).toContain(setup.mcpConfigPath);
    expect(args[args.indexOf('--allowedTools') + 1]).toBe('mcp__sluice,Bash(sluice message:*)');
    expect(args.slice(-2)).toEqual(['--model', 'x']);
    expect(CLAUDE_ALLOWED_TOOLS).toEqual(['mcp__sluice', 'Bash(sluice message:*)']);

    const codex = codexArgs(setup);
    expect(codex[0]).toBe('app-server');
    expect(codex).toContain(
      `mcp_servers.sluice.args=${JSON.stringify(["/opt/it's/bin/sluice.js", 'mcp', '--as', 'bot'])}`,
    );
    expect(codex).toContain(
      `mcp_servers.sluice.env={ "SLUICE_HOME" = ${JSON.stringify(h.home)}, "SLUICE_AS" = "bot", "SLUICE_DB" = ${JSON.stringify(join(h.home, 'sluice.db'))} }`,
    );
    // The model's shell runs under a profile that denies the Sluice home (reads and writes).
    expect(codex).toContain('permissions.sluice_agent.extends=":workspace"');
    expect(codex).toContain(`permissions.sluice_agent.filesystem={ ${JSON.stringify(h.home)} = "deny" }`);
  });

  test('finds the client in SLUICE_CLAUDE_BIN / SLUICE_CODEX_BIN, else on PATH, else says how to fix it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-bin-'));
    const fake = join(dir, 'codex');
    writeFileSync(fake, '#!/bin/sh\n');
    chmodSync(fake, 0o755);
    expect(findClientBinary('codex', { PATH: `/nonexistent:${dir}` })).toBe(fake);
    expect(findClientBinary('claude', { PATH: dir, SLUICE_CLAUDE_BIN: fake })).toBe(fake);
    expect(() => findClientBinary('claude', { PATH: dir })).toThrow(
      'claude is not on PATH: install @anthropic-ai/claude-code or set SLUICE_CLAUDE_BIN',
    );
    expect(() => findClientBinary('codex', { PATH: '', SLUICE_CODEX_BIN: join(dir, 'missing') })).toThrow(
      /SLUICE_CODEX_BIN names .*missing, which is not an executable file/,
    );
  });
});

describe('turn content', () => {
  let h: TestHost;
  let bot: Principal;
  beforeEach(async () => {
    h = await openTestHost();
    bot = await h.agent('bot', 'turn');
  });
  afterEach(async () => {
    await h.close();
  });

  async function deliveredWith(files: { bytes: Uint8Array; name: string }[]) {
    const ids = [];
    for (const f of files) ids.push((await putMedia(h.ctx, h.owner, f.bytes, f.name)).attachment_id);
    const { message_id } = await sendMessage(h.ctx, h.owner, {
      to: 'bot',
      body: 'files',
      attachmentIds: ids,
    });
    const attachments = (
      await h.ctx.store.db
        .selectFrom('messages')
        .select('attachments')
        .where('id', '=', message_id)
        .executeTakeFirstOrThrow()
    ).attachments;
    const projection = await readProjection(h.ctx, bot, message_id);
    return [{ id: message_id, projection, attachments: JSON.parse(attachments) }];
  }

  test('Claude gets the envelope, then an image block, a document block and a pointer, each labelled', async () => {
    const png = await sharp({ create: { width: 2, height: 2, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    const pdf = Buffer.from('%PDF-1.4\n%%EOF\n');
    const zip = new Uint8Array([0x50, 0x4b, 3, 4, ...new Array(40).fill(7)]);
    const delivered = await deliveredWith([
      { bytes: png, name: 'a "quoted" name.png' },
      { bytes: pdf, name: 'doc.pdf' },
      { bytes: zip, name: '../x.zip' },
    ]);
    const blocks = await claudeTurnContent(h.ctx, bot, 'ENVELOPE', delivered);
    expect(blocks.map((b) => b.type)).toEqual(['text', 'text', 'image', 'text', 'document', 'text']);
    expect(blocks[0]).toEqual({ type: 'text', text: 'ENVELOPE' });
    expect(blocks[1]).toMatchObject({
      text: expect.stringContaining('"a \\"quoted\\" name.png" (image/png'),
    });
    // Who sent it, as the agent sees them (provenance).
    expect((blocks[1] as { text: string }).text).toContain('sent by owner (owner): ');
    expect(blocks[2]).toEqual({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: png.toString('base64') },
    });
    expect(blocks[4]).toEqual({
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: pdf.toString('base64') },
      title: 'doc.pdf',
    });
    const pointer = (blocks[5] as { text: string }).text;
    const path = /is saved at (.+)$/.exec(pointer)![1]!;
    expect(path).toMatch(new RegExp(`^${h.home}/materialized/[0-9a-f]{64}/x\\.zip$`));
    expect(new Uint8Array(readFileSync(path))).toEqual(zip);
  });

  test('an image that cannot be read becomes a line saying so, not a failed turn', async () => {
    const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#fff' } })
      .png()
      .toBuffer();
    const broken = png.subarray(0, 33); // a PNG header and nothing after it
    const delivered = await deliveredWith([{ bytes: broken, name: 'broken.png' }]);
    const blocks = await claudeTurnContent(h.ctx, bot, 'ENVELOPE', delivered);
    expect(blocks).toHaveLength(2);
    expect((blocks[1] as { text: string }).text).toMatch(
      /"broken\.png" \(image\/png, 33 bytes\) from message \S+ could not be attached: the image could not be decoded \(.+\)$/,
    );
  });

  test('Codex gets one text item with pointers and a localImage item per image', async () => {
    const png = await sharp({ create: { width: 2, height: 2, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    const delivered = await deliveredWith([
      { bytes: png, name: 'shot.png' },
      { bytes: Buffer.from('plain notes'), name: 'notes.txt' },
    ]);
    const items = await codexTurnInput(h.ctx, bot, 'LEAD', delivered);
    expect(items).toHaveLength(2);
    expect(items[0]).toMatchObject({ type: 'text', text_elements: [] });
    const lines = (items[0] as { text: string }).text.split('\n');
    expect(lines[0]).toBe('LEAD');
    expect(lines[1]).toMatch(
      /"shot\.png" \(image\/png, \d+ bytes\) from message \S+ is attached below as an image/,
    );
    expect(lines[2]).toMatch(
      /"notes\.txt" \(text\/plain, 11 bytes\) from message \S+ is saved at .*\/notes\.txt$/,
    );
    const image = items[1] as { type: string; path: string };
    expect(image.type).toBe('localImage');
    expect(readFileSync(image.path).equals(png)).toBe(true);
  });
});
