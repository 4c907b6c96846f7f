import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, JSONRPCRequest, RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { PendingReceipt } from '../../host/turns/index.js';
import type { ReceiptHolder } from './tools.js';

/** What one HTTP request hands the router: who asks, and where its reads' receipts wait. */
export interface RoutedExchange {
  /** The principal the request authenticated as; the tool server refuses anyone else. */
  principalId: string;
  receipts: ReceiptHolder;
}

interface InFlight {
  originalId: RequestId;
  exchange: RoutedExchange;
  /** Messages for this request (notifications it caused, then its response), in order. */
  frames: JSONRPCMessage[];
  resolve: (frames: JSONRPCMessage[]) => void;
}

/**
 * One long-lived MCP transport carrying many HTTP requests to one tool server: each request gets
 * an id of its own on the way in (two clients may both send id 1) and its original id back on the
 * way out, with the messages the server sent for it. The SDK's Protocol supports one transport per
 * server, so this is how a server is kept across requests instead of built for each one.
 */
export class RequestRouterTransport implements Transport, ReceiptHolder {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  readonly #inFlight = new Map<number, InFlight>();
  #nextId = 1;
  #closed = false;

  async start(): Promise<void> {}

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }

  /** How many requests are being answered now. */
  get busy(): number {
    return this.#inFlight.size;
  }

  /** Hands `request` to the server; resolves with what it sent for it, its response last. */
  dispatch(request: JSONRPCRequest, exchange: RoutedExchange): Promise<JSONRPCMessage[]> {
    if (this.#closed) return Promise.reject(new Error('the MCP tool server was closed'));
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#inFlight.set(id, { originalId: request.id, exchange, frames: [], resolve });
      this.onmessage?.(
        { ...request, id },
        { authInfo: { token: '', clientId: exchange.principalId, scopes: [] } },
      );
    });
  }

  /** The tool server's hook for a read's receipt: it waits in the ledger of its own HTTP request. */
  hold(requestId: RequestId, receipt: PendingReceipt): void {
    const inFlight = typeof requestId === 'number' ? this.#inFlight.get(requestId) : undefined;
    inFlight?.exchange.receipts.hold(inFlight.originalId, receipt);
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const answered = 'id' in message && !('method' in message) ? message.id : undefined;
    const related = answered ?? options?.relatedRequestId;
    const inFlight = typeof related === 'number' ? this.#inFlight.get(related) : undefined;
    // Stateless HTTP has no stream for messages unrelated to a request: they are dropped, as the
    // SDK's own stateless transport drops them.
    if (!inFlight) return;
    if (answered === undefined) {
      inFlight.frames.push(message);
      return;
    }
    this.#inFlight.delete(answered as number);
    inFlight.frames.push({ ...message, id: inFlight.originalId } as JSONRPCMessage);
    inFlight.resolve(inFlight.frames);
  }
}
