import { SluiceError } from '../../core/errors.js';
import { utf8Length } from '../../core/measure.js';
import { decodeUtf8Exactly, quoteInput } from '../../core/text.js';
import {
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  type RpcError,
  RpcFailure,
  toRpcError,
} from './errors.js';
import { HANDLERS, type HandlerResult, type RpcSession } from './methods.js';
import { isMethodName, parseParams } from './schemas.js';

type RpcId = string | number | null;

/** Methods that send a message, drawing on the sender's rate (`RpcSession.admitSend`). */
const SEND_METHODS: ReadonlySet<string> = new Set(['message.send']);

/** `{"jsonrpc":"2.0","id":ID,"result":` — the text before a result. */
function resultHead(idJson: string): string {
  return `{"jsonrpc":"2.0","id":${idJson},"result":`;
}

/** A complete error reply; the message is cut so the reply stays small whatever the id. */
export function renderError(idJson: string, error: RpcError): string {
  return `{"jsonrpc":"2.0","id":${idJson},"error":${JSON.stringify(error)}}`;
}

/** Bytes a reply spends around its result for a given id. */
export function envelopeOverhead(idJson: string): number {
  return utf8Length(resultHead(idJson)) + 1;
}

/** Optional hooks for logging and measuring. */
export interface DispatchObserver {
  onError?(method: string, err: unknown): void;
}

/**
 * Handles a request that arrived as bytes (HTTP POST): bytes that are not UTF-8 are a parse error,
 * never decoded with replacement characters into text the host would then store altered.
 */
export async function handleRpcBytes(
  session: RpcSession,
  bytes: Uint8Array,
  observer: DispatchObserver = {},
): Promise<string | null> {
  const text = decodeUtf8Exactly(bytes);
  if (text === undefined) {
    return renderError('null', {
      code: PARSE_ERROR,
      message: 'parse error: the request is not valid UTF-8; nothing was stored',
      data: { code: 'parse_error' },
    });
  }
  return handleRpcText(session, text, observer);
}

/**
 * Handles one JSON-RPC text frame and returns the reply text, or null for a notification.
 * Every reply (results and errors) fits `session.limits.replyBytes`; ids are echoed exactly and
 * counted in that budget; batches are refused (one request per frame keeps each reply bounded).
 */
export async function handleRpcText(
  session: RpcSession,
  text: string,
  observer: DispatchObserver = {},
): Promise<string | null> {
  let request: unknown;
  try {
    request = JSON.parse(text);
  } catch {
    return renderError('null', {
      code: PARSE_ERROR,
      message: 'parse error: the frame is not JSON',
      data: { code: 'parse_error' },
    });
  }
  if (Array.isArray(request)) {
    return renderError('null', {
      code: INVALID_REQUEST,
      message: 'batch requests are not supported: send one request per frame',
      data: { code: 'invalid_request' },
    });
  }
  if (request === null || typeof request !== 'object') {
    return renderError('null', {
      code: INVALID_REQUEST,
      message: 'a request must be a JSON object',
      data: { code: 'invalid_request' },
    });
  }
  const req = request as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown };
  const isNotification = !Object.hasOwn(req, 'id');
  const id: RpcId = isNotification ? null : (req.id as RpcId);
  if (
    !isNotification &&
    id !== null &&
    typeof id !== 'string' &&
    !(typeof id === 'number' && Number.isFinite(id))
  ) {
    return renderError('null', {
      code: INVALID_REQUEST,
      message: 'id must be a string, a number or null',
      data: { code: 'invalid_request' },
    });
  }
  const idJson = JSON.stringify(id);
  if (utf8Length(idJson) > session.limits.maxIdBytes) {
    return renderError('null', {
      code: INVALID_REQUEST,
      message: `id is longer than ${session.limits.maxIdBytes} bytes`,
      data: { code: 'invalid_request' },
    });
  }
  const method = typeof req.method === 'string' ? req.method : undefined;
  if (req.jsonrpc !== '2.0' || method === undefined) {
    // Not a request, so not a notification either (a notification is a request without an id):
    // always answered, with id null when it had none (JSON-RPC 2.0, "Invalid Request").
    const failure = new RpcFailure(
      INVALID_REQUEST,
      'invalid_request',
      req.jsonrpc !== '2.0' ? 'jsonrpc must be "2.0"' : 'method must be a string',
    );
    observer.onError?.(method ?? '', failure);
    return renderError(idJson, toRpcError(failure));
  }
  try {
    if (!isMethodName(method)) {
      throw new RpcFailure(METHOD_NOT_FOUND, 'method_not_found', `no method ${quoteInput(method)}`);
    }
    const params = parseParams(method, req.params);
    // Valid sends only count against the sender's rate; a refused one stores nothing.
    if (SEND_METHODS.has(method)) session.admitSend?.(session.principal);
    if (method === 'channel.create') session.admitChannelCreate?.(session.principal);
    const budget = session.limits.replyBytes - envelopeOverhead(idJson);
    const handler = HANDLERS[method] as unknown as (
      s: RpcSession,
      p: unknown,
      b: number,
    ) => Promise<HandlerResult>;
    const result = await handler(session, params, budget);
    if (isNotification) return null;
    const resultText = 'text' in result ? result.text : (JSON.stringify(result.value) ?? 'null');
    const reply = `${resultHead(idJson)}${resultText}}`;
    if (utf8Length(reply) > session.limits.replyBytes) {
      throw new SluiceError('too_large', `the reply is over ${session.limits.replyBytes} bytes; page it`);
    }
    return reply;
  } catch (err) {
    observer.onError?.(method ?? '', err);
    if (isNotification) return null;
    return renderError(idJson, toRpcError(err));
  }
}
