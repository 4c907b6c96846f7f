import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import { decodeUtf8Exactly } from '../../core/text.js';
import type { HostContext } from '../../host/context.js';
import type { Principal } from '../../host/principals.js';
import { ReceiptLedger } from '../mcp/receipts.js';
import { buildMcpServer } from '../mcp/tools.js';
import { requireAuth } from './auth.js';
import { capBodiesPerPrincipal } from './limits.js';

/**
 * MCP over Streamable HTTP at `/mcp`, stateless: each POST builds the agent's tool server for the
 * bearer token's principal (which must be an agent) and answers that one request. A read in the
 * agent's open turn counts only once the whole HTTP response was written ('finish'); a connection
 * closed before that (client gone, host killed) leaves everything it carried pending (DESIGN.md I9).
 */
export async function registerMcpRoute(
  app: FastifyInstance,
  ctx: HostContext,
  options: {
    maxBodyBytes: number;
    /** Requests with a body one principal may have in progress (limits.ts). */
    maxBodiesPerPrincipal?: number;
    /** The server's per-principal send rate (send-rate.ts), for `message_send` and `message_reply`. */
    admitSend?: (principal: Principal) => void;
    onInternalError?: (err: unknown) => void;
  },
): Promise<void> {
  await app.register(async (scope) => {
    scope.addHook('onRequest', requireAuth(ctx, { cookie: false }));
    scope.addHook('onRequest', capBodiesPerPrincipal(options.maxBodiesPerPrincipal ?? 8));
    // JSON whose bytes are not UTF-8 is refused, never decoded with U+FFFD into altered text.
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => {
      const text = decodeUtf8Exactly(body as Buffer);
      const refuse = (message: string) => done(Object.assign(new Error(message), { statusCode: 400 }));
      if (text === undefined) return refuse('the request is not valid UTF-8; nothing was stored');
      try {
        done(null, JSON.parse(text));
      } catch {
        refuse('the request body is not valid JSON');
      }
    });
    scope.route({
      method: ['GET', 'POST', 'DELETE'],
      url: '/mcp',
      bodyLimit: options.maxBodyBytes,
      handler: async (req, reply) => {
        const agent = req.principal as Principal;
        if (agent.kind !== 'agent') {
          return reply
            .code(403)
            .send({ error: { code: 'denied', message: 'MCP tools act for an agent: use an agent token' } });
        }
        const onInternalError = options.onInternalError ?? (() => {});
        const receipts = new ReceiptLedger(ctx, onInternalError);
        const admitSend = options.admitSend;
        const server = buildMcpServer(ctx, agent, {
          onInternalError,
          receipts,
          ...(admitSend ? { beforeSend: () => admitSend(agent) } : {}),
        });
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        reply.hijack();
        reply.raw.once('finish', () => {
          // A client that closed its side right after its request (the FIN queued behind it)
          // never reads the reply, even one Node wrote out before it saw that FIN: look once more
          // after the socket's pending events have run.
          setImmediate(() => {
            const socket = req.raw.socket;
            if (socket.readableEnded || socket.errored) receipts.close();
            else void receipts.confirmAll();
          });
        });
        reply.raw.on('close', () => {
          // A response closes after 'finish' too; closed before it, the reply was lost.
          if (!reply.raw.writableFinished) receipts.close();
          void transport.close();
          void server.close();
        });
        await server.connect(transport);
        await transport.handleRequest(req.raw, reply.raw, req.body);
      },
    });
  });
}
