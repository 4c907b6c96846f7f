import type { MessageStatus } from '../wire.js';

/** How a status is read: `message.status {message_id}` over the page's RPC client. */
export type ReadStatus = (messageId: string) => Promise<MessageStatus>;

/** At most this many `message.status` calls in flight: a page of 50 own messages is read in turns. */
const MAX_IN_FLIGHT = 3;

/**
 * Reads `message.status` for the person's own messages and re-reads one when the host says it
 * moved. Requests for a message already being read collapse into one more read after it (the
 * answer must be at least as new as the news that asked for it); never more than
 * {@link MAX_IN_FLIGHT} at once. A message the host no longer has (deleted, or the person left)
 * is dropped silently: its line keeps what it last said.
 */
export class StatusReads {
  readonly #read: ReadStatus;
  readonly #onStatus: (status: MessageStatus) => void;
  readonly #queued = new Set<string>();
  readonly #inFlight = new Set<string>();
  /** Asked again while being read: read once more when the current read ends. */
  readonly #again = new Set<string>();
  #closed = false;

  constructor(read: ReadStatus, onStatus: (status: MessageStatus) => void) {
    this.#read = read;
    this.#onStatus = onStatus;
  }

  /** Reads (or re-reads) the status of `messageId` soon. */
  request(messageId: string): void {
    if (this.#closed) return;
    if (this.#inFlight.has(messageId)) this.#again.add(messageId);
    else this.#queued.add(messageId);
    this.#pump();
  }

  /** Stops: nothing more is read or reported. */
  close(): void {
    this.#closed = true;
    this.#queued.clear();
    this.#again.clear();
  }

  /** Reads waiting or running (for tests). */
  pending(): number {
    return this.#queued.size + this.#inFlight.size + this.#again.size;
  }

  #pump(): void {
    while (!this.#closed && this.#inFlight.size < MAX_IN_FLIGHT) {
      const [next] = this.#queued;
      if (next === undefined) return;
      this.#queued.delete(next);
      this.#inFlight.add(next);
      this.#read(next)
        .then(
          (status) => {
            if (!this.#closed) this.#onStatus(status);
          },
          () => {
            // not_found / not_member / a dropped socket: the line keeps its last state; a
            // reconnect re-requests every shown message.
          },
        )
        .finally(() => {
          this.#inFlight.delete(next);
          if (this.#again.delete(next)) this.#queued.add(next);
          this.#pump();
        });
    }
  }
}
