// The idempotency key of a draft (docs/web.md, "A lost answer is not a lost message"): made once
// per message the person means to send and sent again with every retry of that same message, so
// the host, which keeps one send per key (message.send's `idempotency_key`), never stores it
// twice. No DOM types: the Node tests import it.

/** What a send asks the host to store; a retry with the same request reuses the key. */
export interface SendRequest {
  to: string;
  body: string;
  attachments?: string[];
  reply_to?: string;
}

/** A request's fingerprint and the key it was sent with. */
export interface KeptKey {
  request: string;
  key: string;
}

/** A key the host accepts (1-200 printable characters): `web-` and 128 random bits in hex. */
export function newSendKey(): string {
  // getRandomValues, not randomUUID: the latter needs a secure context, and the page may be
  // served over plain http on a LAN address.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `web-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * The key for `request`: the one kept for it when the draft was sent before unchanged (a retry),
 * else a fresh one. The host refuses a key reused for another request, so an edited draft is a new
 * message with a new key.
 */
export class DraftKeys {
  /**
   * `kept` is a key kept from before (a draft restored after switching channels), so a retry of
   * the same request still sends the same key.
   */
  constructor(
    private readonly makeKey: () => string = newSendKey,
    private kept: KeptKey | null = null,
  ) {}

  /** The key kept for the last request, to be saved with the draft. */
  snapshot(): KeptKey | null {
    return this.kept && { ...this.kept };
  }

  keyFor(request: SendRequest): string {
    const fingerprint = JSON.stringify([
      request.to,
      request.body,
      request.attachments ?? [],
      request.reply_to ?? null,
    ]);
    if (this.kept?.request !== fingerprint) this.kept = { request: fingerprint, key: this.makeKey() };
    return this.kept.key;
  }

  /** The send was confirmed: the next draft is another message. */
  sent(): void {
    this.kept = null;
  }
}
