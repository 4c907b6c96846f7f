/**
 * Counts work in progress per principal and refuses more than `max` at once. `tryEnter` returns
 * a release function (idempotent), or undefined when the principal is at its cap.
 */
export class PrincipalGate {
  readonly #inUse = new Map<string, number>();

  constructor(readonly max: number) {}

  tryEnter(principalId: string): (() => void) | undefined {
    const now = this.#inUse.get(principalId) ?? 0;
    if (now >= this.max) return undefined;
    this.#inUse.set(principalId, now + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#inUse.get(principalId) ?? 1) - 1;
      if (left <= 0) this.#inUse.delete(principalId);
      else this.#inUse.set(principalId, left);
    };
  }

  /** Work in progress for a principal right now. */
  inUse(principalId: string): number {
    return this.#inUse.get(principalId) ?? 0;
  }
}
