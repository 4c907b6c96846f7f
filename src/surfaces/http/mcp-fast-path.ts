import type { IncomingMessage, ServerResponse } from 'node:http';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import {
  type JSONRPCMessage,
  type JSONRPCRequest,
  JSONRPCRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * The request a kept tool server may answer: a POST of one JSON-RPC request (not `initialize`)
 * that the SDK's stateless transport would accept as it is (Accept names both JSON and SSE, the
 * body is JSON, the protocol version is absent or supported). Anything else returns undefined and
 * goes to the SDK's transport, which answers it, refusals included, exactly as before.
 */
export function routableRequest(req: IncomingMessage, body: unknown): JSONRPCRequest | undefined {
  if (req.method !== 'POST') return undefined;
  const accept = req.headers.accept;
  if (
    typeof accept !== 'string' ||
    !accept.includes('application/json') ||
    !accept.includes('text/event-stream')
  )
    return undefined;
  if (!isJsonContentType(req.headers['content-type'])) return undefined;
  const version = req.headers['mcp-protocol-version'];
  if (
    version !== undefined &&
    (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version))
  )
    return undefined;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const parsed = JSONRPCRequestSchema.safeParse(body);
  if (!parsed.success || parsed.data.method === 'initialize') return undefined;
  return parsed.data;
}

/**
 * Writes a request's messages as the SDK's transport does for a POST (an SSE stream of `message`
 * events, the response last), in one write with its length known up front.
 */
export function sseReply(res: ServerResponse, frames: readonly JSONRPCMessage[]): void {
  if (res.destroyed) return;
  const text = frames.map((frame) => `event: message\ndata: ${JSON.stringify(frame)}\n\n`).join('');
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** A JSON-RPC error the SDK's transport would give when a request could not be handled at all. */
export function internalErrorReply(res: ServerResponse, id: JSONRPCRequest['id']): void {
  if (res.destroyed || res.headersSent) return;
  const text = JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: 'Internal error' } });
  res.writeHead(500, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
