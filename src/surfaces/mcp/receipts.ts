import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { HostContext } from '../../host/context.js';
import { replyInFlight } from '../../host/in-flight.js';
import { confirmWritten, type PendingReceipt } from '../../host/turns/index.js';

interface Held {
  receipt: PendingReceipt;
  settle: () => void;
}

/**
 * The receipts of tool results an MCP server produced but has not yet handed to its client
 * (DESIGN.md I9). The transport side confirms one once its reply was written completely, or drops
 * it when the reply was lost; only a confirmed read joins the turn's coverage.
 */
export class ReceiptLedger {
  readonly #held = new Map<RequestId, Held>();
  #closed = false;

  constructor(
    private readonly ctx: HostContext,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** Keeps the receipt of the result answering `requestId` until its reply is known written or lost. */
  hold(requestId: RequestId, receipt: PendingReceipt): void {
    this.#take(requestId)?.settle();
    // The connection is already gone: this reply can never be handed over.
    if (this.#closed) return;
    this.#held.set(requestId, { receipt, settle: replyInFlight(this.ctx, receipt.agentId) });
  }

  /** The reply to `requestId` was handed over completely: its reads join the coverage. */
  async confirm(requestId: RequestId): Promise<void> {
    const held = this.#take(requestId);
    if (held) await this.#confirm(held);
  }

  /** Every reply held here was handed over completely (an HTTP response that finished). */
  async confirmAll(): Promise<void> {
    const all = [...this.#held.values()];
    this.#held.clear();
    await Promise.all(all.map((held) => this.#confirm(held)));
  }

  /** The connection closed: every reply held now or produced later is lost. */
  close(): void {
    this.#closed = true;
    this.drop();
  }

  /** The reply to `requestId` (or every held one) never reached the client: nothing counts. */
  drop(requestId?: RequestId): void {
    if (requestId !== undefined) {
      this.#take(requestId)?.settle();
      return;
    }
    for (const held of this.#held.values()) held.settle();
    this.#held.clear();
  }

  #take(requestId: RequestId): Held | undefined {
    const held = this.#held.get(requestId);
    this.#held.delete(requestId);
    return held;
  }

  async #confirm(held: Held): Promise<void> {
    try {
      await confirmWritten(this.ctx, held.receipt);
    } catch (err) {
      // A receipt that cannot be stored counts for nothing: the message stays pending.
      this.onError(err);
    } finally {
      held.settle();
    }
  }
}

/** The id a JSON-RPC response answers, if `message` is a response. */
function responseId(message: JSONRPCMessage): RequestId | undefined {
  return 'id' in message && !('method' in message) ? message.id : undefined;
}

/**
 * Wraps a transport whose `send` resolves only once the message was handed over (the in-memory
 * pair; the stdio transport below, once stdout took the bytes): a tool reply's receipt is
 * confirmed after its send completed, and dropped if the send failed or the transport closed.
 */
export class ConfirmingTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];

  constructor(
    private readonly inner: Transport,
    private readonly ledger: ReceiptLedger,
  ) {
    inner.onclose = () => {
      ledger.close();
      this.onclose?.();
    };
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = (message, extra) => this.onmessage?.(message, extra);
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  close(): Promise<void> {
    this.ledger.close();
    return this.inner.close();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const id = responseId(message);
    try {
      await this.inner.send(message, options);
    } catch (err) {
      if (id !== undefined) this.ledger.drop(id);
      throw err;
    }
    if (id !== undefined) await this.ledger.confirm(id);
  }
}
