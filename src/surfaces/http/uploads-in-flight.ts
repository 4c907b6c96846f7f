/**
 * Uploads this server is handling (from the handler's start until its temp file is gone), so a
 * shutdown waits for their cleanup and an operator or a check can see when the host is quiet.
 */
export class UploadsInFlight {
  #count = 0;
  #settled = 0;
  #idle: (() => void)[] = [];

  /** Marks one upload as started; call the returned function (idempotent) once it has settled. */
  begin(): () => void {
    this.#count++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#count--;
      this.#settled++;
      if (this.#count === 0) for (const wake of this.#idle.splice(0)) wake();
    };
  }

  /** Uploads in progress now. */
  get count(): number {
    return this.#count;
  }

  /** Uploads that have settled (stored, refused or aborted, their temp file removed) since start. */
  get settled(): number {
    return this.#settled;
  }

  /** Resolves once no upload is in progress. */
  idle(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }
}
