import type { FastifyServerOptions } from 'fastify';

type LoggerOption = FastifyServerOptions['logger'];

/** A request URL without its query string: login codes and any `?token=` a client sends stay out of logs. */
export function redactedUrl(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : `${url.slice(0, q)}?[redacted]`;
}

interface LoggedRequest {
  method: string;
  url: string;
  hostname?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/**
 * Pino options for the request log: the request is logged as method, path (query redacted),
 * host and peer, never headers, so neither `Authorization` nor `Cookie` can reach a log line;
 * `redact` covers any header object a handler logs by hand.
 */
export function requestLogOptions(logger: LoggerOption): LoggerOption {
  if (logger === false || logger === undefined) return false;
  const base = logger === true ? {} : logger;
  if (typeof base !== 'object' || base === null) return logger;
  return {
    ...base,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'res.headers["set-cookie"]',
        'headers.authorization',
        'headers.cookie',
      ],
      censor: '[redacted]',
    },
    serializers: {
      ...((base as { serializers?: object }).serializers ?? {}),
      req(req: LoggedRequest) {
        return {
          method: req.method,
          url: redactedUrl(req.url),
          hostname: req.hostname,
          remoteAddress: req.ip,
          remotePort: req.socket?.remotePort,
        };
      },
    },
  } as LoggerOption;
}
