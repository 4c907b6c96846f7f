import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import {
  attachmentCopies,
  materializeAttachment,
  materializedPath,
  materializedRoot,
  materializeMedia,
} from '../../src/host/media/materialize.js';
import { putMedia } from '../../src/host/media/media.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { deliveryFor } from '../../src/host/queue/delivery.js';
import { openTestHost, type TestHost } from '../support/host.js';

const SHA = 'a'.repeat(64);

describe('materializedPath', () => {
  test.each([
    ['../../etc/passwd', 'passwd'],
    ['..', 'file'],
    ['.', 'file'],
    ['a\u0000b.txt', 'ab.txt'],
    ['..\\..\\windows\\system.ini', 'system.ini'],
    ['/absolute/path.pdf', 'path.pdf'],
    ['.hidden', 'hidden'],
    ['', 'file'],
  ])('keeps %j inside the digest folder as %j', (name, expected) => {
    const path = materializedPath('/home/s', SHA, name);
    expect(path).toBe(join('/home/s/materialized', SHA, expected));
  });

  test('cuts a very long name to 200 characters', () => {
    const path = materializedPath('/home/s', SHA, `${'x'.repeat(5000)}.png`);
    expect(relative(join('/home/s/materialized', SHA), path)).toHaveLength(200);
  });

  test('refuses anything but a sha256 digest as the folder', () => {
    expect(() => materializedPath('/home/s', '../../etc', 'a.txt')).toThrow(/sha256/);
    expect(() => materializedPath('/home/s', SHA.toUpperCase(), 'a.txt')).toThrow(/sha256/);
  });

  test('any name, however hostile, lands as one file directly in the digest folder', () => {
    const hostile = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.constantFrom(
        '..',
        '../',
        '/..',
        '..\\..',
        '\u0000',
        '\ud800',
        '😀/../😀',
        '.'.repeat(500),
        'a/'.repeat(100),
      ),
      fc
        .array(fc.constantFrom('..', '/', '\\', '.', 'a', '\u0000', '\n', '東', '"', "'"), { maxLength: 60 })
        .map((p) => p.join('')),
    );
    fc.assert(
      fc.property(hostile, (name) => {
        const dir = join('/home/s/materialized', SHA);
        const rel = relative(dir, materializedPath('/home/s', SHA, name));
        expect(rel).not.toBe('');
        expect(rel.startsWith('..')).toBe(false);
        expect(rel.includes('/')).toBe(false);
        expect(rel.includes('\u0000')).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});

describe('materializeMedia', () => {
  let h: TestHost;
  beforeEach(async () => {
    h = await openTestHost();
  });
  afterEach(async () => {
    await h.close();
  });

  test('writes the blob once, readable only by this user (folders 0700, file 0600)', async () => {
    const bytes = new TextEncoder().encode('hello attachment');
    const ref = await putMedia(h.ctx, h.owner, bytes, '../../etc/passwd');
    const media = await h.ctx.store.db
      .selectFrom('media')
      .selectAll()
      .where('id', '=', ref.attachment_id)
      .executeTakeFirstOrThrow();
    const path = await materializeMedia(h.ctx, media);
    expect(path).toBe(join(h.home, 'materialized', media.sha256, 'passwd'));
    expect(readFileSync(path, 'utf8')).toBe('hello attachment');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(h.home, 'materialized', media.sha256)).mode & 0o777).toBe(0o700);
    expect(statSync(materializedRoot(h.home)).mode & 0o777).toBe(0o700);
  });

  test('reuses a complete copy and rewrites a truncated one', async () => {
    const ref = await putMedia(h.ctx, h.owner, new TextEncoder().encode('0123456789'), 'n.txt');
    const media = await h.ctx.store.db
      .selectFrom('media')
      .selectAll()
      .where('id', '=', ref.attachment_id)
      .executeTakeFirstOrThrow();
    const path = await materializeMedia(h.ctx, media);
    writeFileSync(path, '01234');
    expect(await materializeMedia(h.ctx, media)).toBe(path);
    expect(readFileSync(path, 'utf8')).toBe('0123456789');
  });

  test('a copy that cannot be written leaves no temp file and fails in one line', async () => {
    const ref = await putMedia(h.ctx, h.owner, new TextEncoder().encode('0123456789'), 'n.txt');
    const media = await h.ctx.store.db
      .selectFrom('media')
      .selectAll()
      .where('id', '=', ref.attachment_id)
      .executeTakeFirstOrThrow();
    // The copy's path taken by a non-empty folder: the temp file is written and the rename
    // fails, as a full disk fails a write after the temp file was created.
    const dir = join(h.home, 'materialized', media.sha256);
    mkdirSync(join(dir, 'n.txt', 'x'), { recursive: true });
    await expect(materializeMedia(h.ctx, media)).rejects.toThrow();
    expect(readdirSync(dir)).toEqual(['n.txt']);
  });

  test('an attachment without a copy is delivered with the reason, and the reason is reported', async () => {
    const agent = await h.agent('bot');
    const ref = await putMedia(h.ctx, h.owner, new TextEncoder().encode('data'), 'd.txt');
    await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'see file', attachmentIds: [ref.attachment_id] });
    const media = await h.ctx.store.db
      .selectFrom('media')
      .selectAll()
      .where('id', '=', ref.attachment_id)
      .executeTakeFirstOrThrow();
    const dir = join(h.home, 'materialized', media.sha256);
    mkdirSync(join(dir, 'd.txt', 'x'), { recursive: true });
    const lines: string[] = [];
    const delivery = await deliveryFor(h.ctx, agent, {
      attachmentPath: attachmentCopies(h.ctx, agent, (line) => lines.push(line)),
    });
    const envelope = JSON.parse(delivery.text.split('\n')[1] as string) as {
      messages: { attachments: Record<string, unknown>[] }[];
    };
    const [attachment] = envelope.messages[0]?.attachments ?? [];
    expect(attachment).not.toHaveProperty('path');
    expect(attachment?.path_error).toMatch(/local copy could not be written \((EISDIR|ENOTEMPTY|EEXIST)\)/);
    expect(lines).toEqual([
      `attachment ${ref.attachment_id} (d.txt) has no local copy: ${attachment?.path_error as string}`,
    ]);
    expect(readdirSync(dir)).toEqual(['d.txt']);
  });

  test('an agent materialises only attachments it may read', async () => {
    const agent = await h.agent('bot');
    const other = await h.agent('other');
    const ref = await putMedia(h.ctx, h.owner, new TextEncoder().encode('secret'), 's.txt');
    await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'see file', attachmentIds: [ref.attachment_id] });
    await expect(materializeAttachment(h.ctx, agent, ref.attachment_id)).resolves.toMatch(/s\.txt$/);
    await expect(materializeAttachment(h.ctx, other, ref.attachment_id)).rejects.toMatchObject({
      code: 'not_found',
    });
  });
});
