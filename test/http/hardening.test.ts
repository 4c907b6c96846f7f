import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import { addPrincipal } from '../../src/host/identity/principals.js';
import { sanitizeFileName } from '../../src/host/media/media.js';
import { openServedHost, type ServedHost } from '../rpc/support.js';

/** Bidi overrides and isolates, zero-width marks, BOM, soft hyphen, line separators, C0/C1 controls. */
const INVISIBLE = [
  '\u202E',
  '\u202D',
  '\u202A',
  '\u202B',
  '\u202C',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u200E',
  '\u200F',
  '\u061C',
  '\u200B',
  '\u200C',
  '\u200D',
  '\u2060',
  '\uFEFF',
  '\u00AD',
  '\u2028',
  '\u2029',
  '\u0000',
  '\u001B',
  '\u007F',
  '\u0085',
  '\u009B',
];

describe('names that lie about themselves', () => {
  it('an attachment named invoice\\u202Egpj.exe is stored as invoicegpj.exe', () => {
    expect(sanitizeFileName('invoice\u202Egpj.exe')).toBe('invoicegpj.exe');
    expect(sanitizeFileName('\u2067photo\u2069.png')).toBe('photo.png');
  });

  it('no attachment name keeps an invisible or control character, whatever surrounds it (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom(...INVISIBLE)), { maxLength: 12 }),
        (parts) => {
          const name = sanitizeFileName(parts.join(''));
          expect(name).not.toMatch(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u);
          expect(name.length).toBeGreaterThan(0);
        },
      ),
    );
  });

  describe('over HTTP', () => {
    let h: ServedHost;
    beforeAll(async () => {
      h = await openServedHost();
    });
    afterAll(async () => h.close());

    it('POST /media strips bidi controls from X-Filename, and the download header carries the clean name', async () => {
      const token = await h.token();
      const up = await h.server.app.inject({
        method: 'POST',
        url: '/media',
        headers: {
          authorization: `Bearer ${token}`,
          'x-filename': encodeURIComponent('invoice\u202Egpj.exe'),
          'content-type': 'application/octet-stream',
        },
        payload: Buffer.from('MZ not really a program'),
      });
      expect(up.statusCode).toBe(201);
      expect(up.json()).toMatchObject({ name: 'invoicegpj.exe' });
      const down = await h.server.app.inject({
        method: 'GET',
        url: `/media/${up.json().attachment_id}`,
        headers: { authorization: `Bearer ${token}` },
      });
      expect(down.headers['content-disposition']).toContain("filename*=UTF-8''invoicegpj.exe");
    });

    it.each(
      INVISIBLE.filter((c) => c !== '\u0000').map((c) => [
        (c.codePointAt(0) as number).toString(16).padStart(4, '0'),
        c,
      ]),
    )('a principal or channel name with U+%s is refused, nothing stored', async (_hex, c) => {
      const name = `ali${c}ce`;
      await expect(addPrincipal(h.ctx, { name, kind: 'person' })).rejects.toMatchObject({
        code: 'invalid_params',
      });
      await expect(createChannel(h.ctx, h.owner, { name, members: [] })).rejects.toMatchObject({
        code: 'invalid_params',
      });
    });
  });
});
