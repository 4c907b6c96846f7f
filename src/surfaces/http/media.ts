import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { SluiceError } from '../../core/errors.js';
import type { HostContext } from '../../host/context.js';
import { putMedia, readMediaBytes } from '../../host/media.js';
import type { Principal } from '../../host/principals.js';
import { requireAuth } from './auth.js';
import { httpError } from './status.js';

/** `X-Filename` is percent-encoded UTF-8 (headers are Latin-1); a raw value is taken as it is. */
function fileNameOf(header: unknown): string {
  const raw = Array.isArray(header) ? header[0] : header;
  if (typeof raw !== 'string') return 'file';
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** Reads a request stream, refusing it as soon as it passes `cap` bytes. */
async function readCapped(stream: Readable, cap: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    const buf = chunk as Buffer;
    total += buf.length;
    if (total > cap) {
      stream.resume();
      throw new SluiceError('too_large', `upload is over the ${cap}-byte limit`);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

/**
 * `POST /media` (raw bytes, `X-Filename`) → `{attachment_id, name, mime, size}`, MIME sniffed from
 * the bytes; `GET /media/<id>` for the uploader and members of a channel that references it.
 */
export async function registerMediaRoutes(app: FastifyInstance, ctx: HostContext): Promise<void> {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    // Raw bytes of any type: the handler streams them, so the size cap applies while reading.
    scope.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    scope.addHook('preValidation', requireAuth(ctx));

    scope.post('/media', async (req, reply) => {
      const cap = ctx.limits.maxUploadBytes;
      const declared = Number(req.headers['content-length'] ?? Number.NaN);
      try {
        if (Number.isFinite(declared) && declared > cap) {
          throw new SluiceError('too_large', `upload is ${declared} bytes; the limit is ${cap}`);
        }
        const stream = (req.body ?? req.raw) as Readable;
        const bytes = await readCapped(stream, cap);
        const ref = await putMedia(
          ctx,
          req.principal as Principal,
          bytes,
          fileNameOf(req.headers['x-filename']),
        );
        return reply.code(201).send(ref);
      } catch (err) {
        const { status, body } = httpError(err);
        if (status === 413) reply.header('connection', 'close');
        return reply.code(status).send(body);
      }
    });

    scope.get('/media/:id', async (req, reply) => {
      const { id } = req.params as { id: string };
      try {
        const { media, bytes } = await readMediaBytes(ctx, req.principal as Principal, id);
        const inline = /^image\/(png|jpeg|gif|webp)$/.test(media.mime);
        return reply
          .type(media.mime)
          .header('x-content-type-options', 'nosniff')
          .header('content-security-policy', 'sandbox')
          .header('cache-control', 'private, max-age=3600')
          .header(
            'content-disposition',
            `${inline ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(media.name)}`,
          )
          .send(Buffer.from(bytes));
      } catch (err) {
        const { status, body } = httpError(err);
        return reply.code(status).send(body);
      }
    });
  });
}
