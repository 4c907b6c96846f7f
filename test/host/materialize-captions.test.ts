// Attachments are references: the persisted message keeps the sender's caption, or a short note
// naming what was sent when there is none (DESIGN.md §6).
import fc from 'fast-check';
import sharp from 'sharp';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { putMedia } from '../../src/host/media/media.js';
import { captionFor, sendMessage } from '../../src/host/messages/messages.js';
import { openTestHost, type TestHost } from '../support/host.js';

const ref = (name: string, mime: string) => ({ attachment_id: `a_${name}`, name, mime, size: 1 });

describe('captionFor', () => {
  test.each([
    ['one image', [ref('name.png', 'image/png')], '(sent an image: name.png)'],
    ['one file', [ref('a.pdf', 'application/pdf')], '(sent a file: a.pdf)'],
    [
      'two files',
      [ref('a.pdf', 'application/pdf'), ref('b.zip', 'application/zip')],
      '(sent 2 files: a.pdf, b.zip)',
    ],
    ['two images', [ref('x.png', 'image/png'), ref('y.jpg', 'image/jpeg')], '(sent 2 images: x.png, y.jpg)'],
    [
      'an image and a file',
      [ref('x.png', 'image/png'), ref('b.zip', 'application/zip')],
      '(sent 2 files: x.png, b.zip)',
    ],
  ])('an empty body with %s becomes a note', (_what, attachments, note) => {
    expect(captionFor('', attachments)).toBe(note);
    expect(captionFor('  \n\t', attachments)).toBe(note);
  });

  test('a caption is kept exactly as written, whatever it contains', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 200 }).filter((s) => s.trim() !== ''),
        (body) => {
          expect(captionFor(body, [ref('name.png', 'image/png')])).toBe(body);
        },
      ),
    );
  });

  test('no attachments and no body stays empty (the send refuses it)', () => {
    expect(captionFor('', [])).toBe('');
  });
});

describe('persisted captions', () => {
  let h: TestHost;
  beforeEach(async () => {
    h = await openTestHost();
    await h.agent('bot');
  });
  afterEach(async () => {
    await h.close();
  });

  const png = () =>
    sharp({ create: { width: 4, height: 4, channels: 3, background: '#fff' } })
      .png()
      .toBuffer();
  const stored = async (id: string) =>
    h.ctx.store.db
      .selectFrom('messages')
      .select(['body', 'attachments'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();

  test('an image sent without text is stored as "(sent an image: name.png)" with a reference only', async () => {
    const a = await putMedia(h.ctx, h.owner, await png(), 'name.png');
    const { message_id } = await sendMessage(h.ctx, h.owner, {
      to: 'bot',
      body: '',
      attachmentIds: [a.attachment_id],
    });
    const row = await stored(message_id);
    expect(row.body).toBe('(sent an image: name.png)');
    expect(JSON.parse(row.attachments)).toEqual([
      { attachment_id: a.attachment_id, name: 'name.png', mime: 'image/png', size: a.size },
    ]);
  });

  test('two files sent without text are stored as "(sent 2 files: a.pdf, b.zip)"', async () => {
    const pdf = await putMedia(h.ctx, h.owner, new TextEncoder().encode('%PDF-1.4\n%%EOF\n'), 'a.pdf');
    const zip = await putMedia(
      h.ctx,
      h.owner,
      new Uint8Array([0x50, 0x4b, 3, 4, ...new Array(40).fill(0)]),
      'b.zip',
    );
    const { message_id } = await sendMessage(h.ctx, h.owner, {
      to: 'bot',
      body: '',
      attachmentIds: [pdf.attachment_id, zip.attachment_id],
    });
    expect((await stored(message_id)).body).toBe('(sent 2 files: a.pdf, b.zip)');
  });

  test('a caption sent with an attachment is stored as the body', async () => {
    const a = await putMedia(h.ctx, h.owner, await png(), 'time.png');
    const { message_id } = await sendMessage(h.ctx, h.owner, {
      to: 'bot',
      body: "here's a screenshot of the new time, change the invitation",
      attachmentIds: [a.attachment_id],
    });
    expect((await stored(message_id)).body).toBe(
      "here's a screenshot of the new time, change the invitation",
    );
  });

  test('the note uses the sanitised name, never a path', async () => {
    const a = await putMedia(h.ctx, h.owner, await png(), '../../etc/shot.png');
    const { message_id } = await sendMessage(h.ctx, h.owner, {
      to: 'bot',
      body: '',
      attachmentIds: [a.attachment_id],
    });
    expect((await stored(message_id)).body).toBe('(sent an image: shot.png)');
  });
});
