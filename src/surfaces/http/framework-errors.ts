import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { oneLine, type SluiceErrorCode } from '../../core/errors.js';

/** The body every refusal of the host carries, whoever refused: a handler, Fastify or Node. */
export interface CodedBody {
  error: { code: SluiceErrorCode; message: string };
}

const coded = (code: SluiceErrorCode, message: string): CodedBody => ({ error: { code, message } });

/**
 * A 4xx refusal that is not a SluiceError, in Sluice's shape, keeping its status: Fastify's own
 * (a body over the limit, a content type nobody parses, bad JSON), whose messages may echo the
 * request (a content type) and are replaced by a fixed line, or one of the host's body parsers,
 * whose one-line message is written for the caller and kept.
 */
export function codedFastifyRefusal(status: number, err?: { code?: unknown; message?: unknown }): CodedBody {
  const code: SluiceErrorCode =
    status === 413 || status === 431
      ? 'too_large'
      : status === 404
        ? 'not_found'
        : status === 429
          ? 'rate_limited'
          : 'invalid_params';
  const ours = err && !String(err.code ?? '').startsWith('FST_') && typeof err.message === 'string';
  if (ours && err.message) return coded(code, oneLine(err.message as string));
  if (status === 413) return coded(code, 'the request body is over the limit');
  if (status === 404) return coded(code, 'no such route');
  return coded(code, `the request was refused (${status} ${STATUS_CODES[status] ?? ''})`.trim());
}

/**
 * Fastify's router refusals (`frameworkErrors`): a URL that does not percent-decode is a bad
 * request; a path parameter longer than the router takes is an id no Sluice object has. The path
 * is not echoed: it is the caller's input and may carry anything.
 */
export function answerRouterRefusal(err: { code?: string }, _req: FastifyRequest, reply: FastifyReply): void {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply.code(404).send(coded('not_found', 'no such id (longer than any id the host gives out)'));
    return;
  }
  void reply.code(400).send(coded('invalid_params', 'the URL does not decode (bad percent-encoding)'));
}

/**
 * Node's refusals before a request exists (headers over the size limit, a request that outlived
 * its deadline, a malformed request line), written to the socket in Sluice's shape, then the
 * socket is closed, as Node itself does.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, body] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, coded('too_large', 'the request headers are over the size limit')]
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, coded('unavailable', 'the request took too long to arrive')]
        : [400, coded('invalid_params', 'the request is not valid HTTP')];
  const text = JSON.stringify(body);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
        `Content-Type: application/json\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy(err);
}
