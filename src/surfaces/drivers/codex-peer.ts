import type { JsonLineChild } from './child.js';
import { ClientGoneError } from './loop.js';

/** An error answer from the app-server: `message` is its own text. */
export class CodexRpcError extends Error {
  constructor(
    readonly method: string,
    readonly rpcMessage: string,
  ) {
    super(`codex: ${method}: ${rpcMessage}`);
  }
}

/** A JSON-RPC peer over the app-server's stdio (no `jsonrpc` member on this wire). */
export class AppServerPeer {
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { method: string; resolve: (v: unknown) => void; reject: (e: Error) => void }
  >();
  private readonly notificationListeners = new Set<(method: string, params: unknown) => void>();
  private goneWhy: string | undefined;

  /** Answers the server's own requests (approvals, questions); undefined: not answered (an error). */
  answerRequest: ((method: string, params: unknown) => Promise<unknown> | undefined) | undefined;

  /** `gone` says why the process exited (its own stderr line); requests in flight fail with it. */
  constructor(
    private readonly child: JsonLineChild,
    gone: Promise<string>,
  ) {
    child.onLine((line) => this.dispatch(line as Record<string, unknown>));
    void gone.then((why) => {
      this.goneWhy = why;
      for (const p of this.pending.values()) p.reject(new ClientGoneError(why));
      this.pending.clear();
    });
  }

  private dispatch(line: Record<string, unknown>): void {
    const { id, method } = line;
    if (typeof method === 'string' && id !== undefined) {
      // A request from the server: approvals and user-input questions go to a person
      // (codex-approvals.ts); anything else is refused, as nobody sits at an unattended driver.
      const answered = this.answerRequest?.(method, line.params);
      if (answered === undefined) {
        this.child.send({ id, error: { code: -32601, message: `sluice drive does not answer ${method}` } });
        return;
      }
      answered.then(
        (result) => {
          if (result !== undefined) this.child.send({ id, result });
        },
        (err: unknown) =>
          this.child.send({
            id,
            error: { code: -32603, message: err instanceof Error ? err.message : String(err) },
          }),
      );
      return;
    }
    if (typeof method === 'string') {
      for (const fn of this.notificationListeners) fn(method, line.params);
      return;
    }
    if (typeof id === 'number') {
      const waiter = this.pending.get(id);
      if (!waiter) return;
      this.pending.delete(id);
      if (line.error !== undefined) {
        const message = (line.error as { message?: unknown } | null)?.message;
        const text = typeof message === 'string' ? message : JSON.stringify(line.error);
        waiter.reject(new CodexRpcError(waiter.method, text.slice(0, 300)));
      } else waiter.resolve(line.result);
    }
  }

  request<T>(method: string, params: unknown): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      // A request after the exit would wait forever: nobody answers it.
      if (this.goneWhy !== undefined) return reject(new ClientGoneError(this.goneWhy));
      this.pending.set(id, { method, resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, method, params });
    });
  }

  notify(method: string): void {
    this.child.send({ method });
  }

  onNotification(fn: (method: string, params: unknown) => void): () => void {
    this.notificationListeners.add(fn);
    return () => {
      this.notificationListeners.delete(fn);
    };
  }
}
