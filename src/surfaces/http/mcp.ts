import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { decodeUtf8Exactly } from '../../core/text.js';
import type { HostContext, Principal } from '../../host/identity/index.js';
import { withOneLineErrors } from '../mcp/one-line-errors.js';
import { ReceiptLedger } from '../mcp/receipts.js';
import { buildMcpServer, type McpServerOptions } from '../mcp/tools.js';
import { authenticatedPrincipal, requireAuth } from './auth.js';
import { type BodyCap, capBodiesPerPrincipal } from './limits.js';
import { internalErrorReply, routableRequest, sseReply } from './mcp-fast-path.js';
import { AgentToolServers } from './mcp-servers.js';

/**
 * MCP over Streamable HTTP at `/mcp`, stateless: each request is authenticated by its bearer token
 * (whose principal must be an agent; a person is refused before any body is read). A single
 * JSON-RPC request POSTed the usual way goes to the agent's tool server kept across requests
 * (mcp-servers.ts) and is answered as the SDK's transport would answer it; any other POST
 * (batches, initialize, odd headers) gets a fresh server and the SDK's transport for that one
 * request. GET and DELETE are 405 (refuseWithoutPost). A read in the agent's open turn counts only
 * once the whole HTTP response was written ('finish'); a connection closed before that (client
 * gone, host killed) leaves everything it carried pending (DESIGN.md I9).
 */
export async function registerMcpRoute(
  app: FastifyInstance,
  ctx: HostContext,
  options: {
    maxBodyBytes: number;
    /**
     * The cap on requests with a body one principal has in progress (limits.ts), shared with
     * `/rpc` so that both routes together stay under it; by default one of 8 for `/mcp` alone.
     */
    capBodies?: BodyCap;
    /** The server's per-principal send rate (send-rate.ts), for `message_send` and `message_reply`. */
    admitSend?: (principal: Principal) => void;
    onInternalError?: (err: unknown) => void;
  },
): Promise<void> {
  const onInternalError = options.onInternalError ?? (() => {});
  const admitSend = options.admitSend;
  const serverOptions = (agent: Principal): McpServerOptions => ({
    onInternalError,
    ...(admitSend ? { beforeSend: () => admitSend(agent) } : {}),
  });
  const kept = new AgentToolServers((agent, receipts) =>
    buildMcpServer(ctx, agent, { ...serverOptions(agent), receipts, callerMustBeAgent: true }),
  );
  app.addHook('onClose', async () => kept.closeAll());
  await app.register(async (scope) => {
    scope.addHook('onRequest', requireAuth(ctx, { cookie: false }));
    scope.addHook('onRequest', requireAgent);
    scope.addHook('onRequest', options.capBodies ?? capBodiesPerPrincipal(8));
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
    scope.route({ method: ['GET', 'DELETE'], url: '/mcp', handler: refuseWithoutPost });
    scope.route({
      method: 'POST',
      url: '/mcp',
      bodyLimit: options.maxBodyBytes,
      handler: async (req, reply) => {
        const agent = authenticatedPrincipal(req);
        const receipts = new ReceiptLedger(ctx, onInternalError);
        const request = routableRequest(req.raw, req.body);
        reply.hijack();
        settleReceiptsWithResponse(req.raw, reply.raw, receipts);
        if (request) {
          try {
            const { router } = await kept.serverFor(agent);
            sseReply(reply.raw, await router.dispatch(request, { principalId: agent.id, receipts }));
          } catch (err) {
            onInternalError(err);
            internalErrorReply(reply.raw, request.id);
          }
          return;
        }
        const server = buildMcpServer(ctx, agent, { ...serverOptions(agent), receipts });
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        reply.raw.on('close', () => {
          void transport.close();
          void server.close();
        });
        await server.connect(withOneLineErrors(transport));
        await transport.handleRequest(req.raw, reply.raw, req.body);
      },
    });
  });
}

/** onRequest: only an agent has MCP tools; a person is refused before its body is read. */
async function requireAgent(req: FastifyRequest, reply: FastifyReply) {
  if (authenticatedPrincipal(req).kind === 'agent') return;
  return reply
    .code(403)
    .send({ error: { code: 'denied', message: 'MCP tools act for an agent: use an agent token' } });
}

/**
 * GET would open the standalone server-to-client SSE stream and DELETE would end a session, but
 * `/mcp` is stateless: it has no session and nothing to push outside a POST's own reply. An open
 * GET stream would only hold a connection forever (its keepalives never let it idle out), so both
 * are 405, as the Streamable HTTP spec allows; the SDK's client takes a 405 on GET as "no
 * stream" and on DELETE as "nothing to end".
 */
async function refuseWithoutPost(_req: FastifyRequest, reply: FastifyReply) {
  return (
    reply
      .code(405)
      .header('allow', 'POST')
      // Nor is the connection kept alive for more: a flood of GETs must not fill the host's
      // connections for a keep-alive timeout either (a client asks once, after initialize).
      .header('connection', 'close')
      .send({
        error: {
          code: 'invalid_params',
          message:
            'POST a JSON-RPC request to /mcp: it is stateless, with no stream to GET and no session to DELETE',
        },
      })
  );
}

/**
 * A read's receipts count once the whole response was written ('finish'), and are dropped when
 * the response closed before that or the client had already gone.
 */
function settleReceiptsWithResponse(req: IncomingMessage, res: ServerResponse, receipts: ReceiptLedger) {
  res.once('finish', () => {
    // A client that closed its side right after its request (the FIN queued behind it)
    // never reads the reply, even one Node wrote out before it saw that FIN: look once more
    // after the socket's pending events have run: a poll phase must pass first, since a reply
    // answered from memory can finish in the same turn of the loop that read its request.
    setImmediate(() =>
      setImmediate(() => {
        const socket = req.socket;
        if (socket.readableEnded || socket.errored) receipts.close();
        else void receipts.confirmAll();
      }),
    );
  });
  res.on('close', () => {
    // A response closes after 'finish' too; closed before it, the reply was lost.
    if (!res.writableFinished) receipts.close();
  });
}
