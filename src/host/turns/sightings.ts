import type { HostContext } from '../context.js';
import type { Principal } from '../principals.js';
import { confirmSeen } from './receipts.js';

/**
 * What a client's own output stream showed its model, verbatim, as a driver reports it: the proof
 * that something a turn offered reached the model (DESIGN.md I9). A driver reads its client's
 * protocol and reports these; it never decides what they count for.
 */
export type ClientSaw =
  /** The result of a sluice tool call, as the client handed it to the model. */
  | { kind: 'tool_result'; text: string }
  /** A user message the client took into the running turn (a steered envelope's echo). */
  | { kind: 'user_message'; text: string };

/**
 * Confirms, during one driven turn, what the client showed its model. A read or a steer only
 * offered its coverage, keyed by the SHA-256 of the exact text it produced; a sighting whose text
 * matches one exactly joins the turn, anything else (another tool's output, an altered or cut
 * result) confirms nothing. Settle only after {@link settled}.
 */
export class TurnSightings {
  readonly #pending: Promise<unknown>[] = [];

  constructor(
    private readonly ctx: HostContext,
    private readonly agent: Principal,
    private readonly turnId: string,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** The client showed its model `what`. */
  saw(what: ClientSaw): void {
    this.#pending.push(confirmSeen(this.ctx, this.agent, this.turnId, what.text).catch(this.onError));
  }

  /** Resolves once every confirmation started so far was stored (or failed, counting nothing). */
  async settled(): Promise<void> {
    // A sighting reported while these are stored is waited for too.
    for (let done = 0; done < this.#pending.length; ) {
      const batch = this.#pending.slice(done);
      await Promise.allSettled(batch);
      done += batch.length;
    }
  }
}
