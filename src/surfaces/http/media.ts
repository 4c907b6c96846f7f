import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SluiceError } from '../../core/errors.js';
import { decodeUtf8Exactly } from '../../core/text.js';
import type { HostContext } from '../../host/identity/index.js';
import { openMediaStream, putMediaStream } from '../../host/media/index.js';
import { authenticatedPrincipal, requireAuth } from './auth.js';
import { answerBusy, type HttpLimits } from './limits.js';
import { PrincipalGate } from './principal-gate.js';
import { resolveRange } from './range.js';
import { httpError } from './status.js';
import { UploadsInFlight } from './uploads-in-flight.js';

/**
 * `X-Filename` is percent-encoded UTF-8 (headers are Latin-1); an ASCII value that is not valid
 * percent-encoding is taken as it is. Raw non-ASCII bytes are taken as UTF-8, exactly, or refused:
 * never stored as Latin-1 mojibake or replacement characters.
 */
function fileNameOf(header: unknown): string {
  const raw = Array.isArray(header) ? header[0] : header;
  if (typeof raw !== 'string') return 'file';
  if (/[^\x00-\x7f]/.test(raw)) {
    const text = decodeUtf8Exactly(Buffer.from(raw, 'latin1'));
    if (text === undefined) {
      throw new SluiceError('invalid_params', 'X-Filename is not UTF-8: percent-encode it', {
        field: 'X-Filename',
      });
    }
    return text;
  }
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * The request's chunks, without destroying the request when the reader stops early (an upload
 * over the limit): the socket must survive long enough to carry the 413.
 */
async function* chunksOf(stream: Readable): AsyncGenerator<Uint8Array> {
  for await (const chunk of stream.iterator({ destroyOnReturn: false })) yield chunk as Uint8Array;
}

/**
 * `POST /media` (raw bytes, `X-Filename`) → `{attachment_id, name, mime, size}`, streamed to a
 * temp file while hashed, MIME sniffed from the bytes; `GET /media/<id>` streams the bytes (with
 * `Range` and an ETag from the digest) to the uploader and members of a channel that references
 * it. Both are capped per principal.
 */
export async function registerMediaRoutes(
  app: FastifyInstance,
  ctx: HostContext,
  limits: Pick<HttpLimits, 'maxUploadsPerPrincipal' | 'maxDownloadsPerPrincipal'>,
  inFlight: UploadsInFlight = new UploadsInFlight(),
): Promise<void> {
  // Closing the server drops every connection; each upload then removes its temp file, and the
  // close waits for that (a host that exits leaves none behind).
  app.addHook('onClose', () => inFlight.idle());
  const uploads = new PrincipalGate(limits.maxUploadsPerPrincipal);
  const downloads = new PrincipalGate(limits.maxDownloadsPerPrincipal);
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    // Raw bytes of any type: the handler streams them, so the size cap applies while reading.
    scope.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    // onRequest: the token is checked before a single body byte is read.
    scope.addHook('onRequest', requireAuth(ctx));

    scope.post('/media', async (req, reply) => {
      const settled = inFlight.begin();
      try {
        // A client gone before the handler runs has nothing to store and nobody to answer.
        if (req.raw.destroyed) return reply;
        return await upload(req, reply);
      } finally {
        settled();
      }
    });

    const upload = async (req: FastifyRequest, reply: FastifyReply) => {
      const principal = authenticatedPrincipal(req);
      const cap = ctx.limits.maxUploadBytes;
      const declared = Number(req.headers['content-length'] ?? Number.NaN);
      if (Number.isFinite(declared) && declared > cap) {
        const { status, body } = httpError(
          new SluiceError('too_large', `upload is ${declared} bytes; the limit is ${cap}`),
        );
        return reply.code(status).send(body);
      }
      const release = uploads.tryEnter(principal.id);
      if (!release) return answerBusy(reply, 'uploads', uploads.max);
      try {
        const stream = (req.body ?? req.raw) as Readable;
        const ref = await putMediaStream(
          ctx,
          principal,
          chunksOf(stream),
          fileNameOf(req.headers['x-filename']),
        );
        return reply.code(201).send(ref);
      } catch (err) {
        const { status, body } = httpError(err);
        return reply.code(status).send(body);
      } finally {
        release();
      }
    };

    scope.get('/media/:id', async (req, reply) => {
      const { id } = req.params as { id: string };
      const principal = authenticatedPrincipal(req);
      try {
        const { media, open } = await openMediaStream(ctx, principal, id);
        const etag = `"${media.sha256}"`;
        const inline = /^image\/(png|jpeg|gif|webp)$/.test(media.mime);
        reply
          .header('x-content-type-options', 'nosniff')
          .header('content-security-policy', 'sandbox')
          .header('cache-control', 'private, max-age=3600')
          .header('etag', etag)
          .header('accept-ranges', 'bytes');
        if (req.headers['if-none-match'] === etag) return reply.code(304).send();
        // If-Range names the version a partial download started from; another version gets all.
        const ifRange = req.headers['if-range'];
        const rangeHeader = ifRange === undefined || ifRange === etag ? req.headers.range : undefined;
        const range = resolveRange(rangeHeader, media.size);
        if (range === 'unsatisfiable') {
          return reply
            .code(416)
            .header('content-range', `bytes */${media.size}`)
            .send({
              error: { code: 'invalid_params', message: `the range is past the end (${media.size} bytes)` },
            });
        }
        const release = downloads.tryEnter(principal.id);
        if (!release) return answerBusy(reply, 'downloads', downloads.max);
        // Released when the response ends or its connection goes away, read or not.
        reply.raw.once('close', release);
        let stream: Readable;
        try {
          stream = await open(range === 'full' ? undefined : range);
        } catch (err) {
          release();
          throw err;
        }
        reply
          .type(media.mime)
          .header(
            'content-disposition',
            `${inline ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(media.name)}`,
          );
        if (range === 'full') return reply.header('content-length', media.size).send(stream);
        return reply
          .code(206)
          .header('content-range', `bytes ${range.start}-${range.end}/${media.size}`)
          .header('content-length', range.end - range.start + 1)
          .send(stream);
      } catch (err) {
        const { status, body } = httpError(err);
        return reply.code(status).send(body);
      }
    });
  });
}
