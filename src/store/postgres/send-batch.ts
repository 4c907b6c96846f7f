import { CompiledQuery, type Kysely, type QueryResult } from 'kysely';
import type { Database } from '../schema.js';
import type { Db } from '../store.js';
import { noteLockTimeout } from './lock-timeout.js';
import { retryTransient } from './retry.js';
import { encodeText } from './text.js';

/** The statement a plain send runs (send.ts, `storeAndFanOut`): what a batch collects. */
export const SLUICE_SEND = 'select sluice_send($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) as seq';

const SEND_MANY = `select seq, error_code, error_message from sluice_send_many($1::text[], $2::text[], $3::text[],
  $4::text[], $5::text[], $6::integer[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])`;

/** The parameters of one `sluice_send` (migration 020 added the origin, the last). */
const SEND_PARAMETERS = 12;

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** Most sends in one call (each takes a subtransaction id; see migration 011_send_batches). */
export const MAX_BATCH = 32;

interface Waiting {
  parameters: readonly unknown[];
  resolve: (result: QueryResult<unknown>) => void;
  reject: (err: unknown) => void;
}

interface Outcome {
  seq: number | null;
  error_code: string | null;
  error_message: string | null;
}

/** The error a send failing alone would have raised: its message and SQLSTATE (`code`). */
function sendError(outcome: Outcome, lockTimeoutMs: number | undefined): unknown {
  const err = Object.assign(new Error(outcome.error_message ?? 'send failed'), { code: outcome.error_code });
  return noteLockTimeout(err, lockTimeoutMs);
}

/**
 * Group commit for PostgreSQL's plain sends: the `sluice_send` statements a host issues while an
 * earlier batch is committing (or in the same turn of the event loop as an idle one) run as one
 * call of `sluice_send_many`, in one transaction: one round trip, one WAL flush and one
 * notification for the whole batch, each send acknowledged only after that commit. A lone send
 * starts at once (one `setImmediate`, no timer); under load each batch is what arrived during the
 * previous one. A send that fails inside the batch fails alone with its own SQLSTATE; if the call
 * fails as a whole for another reason than a transient conflict (retried), nothing of it committed
 * and each send runs again alone.
 *
 * Returns a Db that is `db` except that it sends that one statement through the batch; every other
 * query runs on `db` as before.
 */
export function batchingSends(
  db: Kysely<Database>,
  options: { maxBatch?: number; lockTimeoutMs?: number } = {},
): Db {
  const { maxBatch = MAX_BATCH, lockTimeoutMs } = options;
  const queue: Waiting[] = [];
  let busy = false;

  const alone = (w: Waiting) =>
    db.executeQuery(CompiledQuery.raw(SLUICE_SEND, [...w.parameters])).then(w.resolve, w.reject);

  const runBatch = async (batch: Waiting[]): Promise<void> => {
    if (batch.length === 1) return alone(batch[0] as Waiting);
    // Column arrays; strings are escaped here since the driver wrapper escapes only scalar strings.
    const columns = Array.from({ length: SEND_PARAMETERS }, (_, c) =>
      batch.map((w) => {
        const v = w.parameters[c];
        return typeof v === 'string' ? encodeText(v) : v;
      }),
    );
    let outcomes: Outcome[];
    try {
      const result = await retryTransient(() =>
        db.executeQuery<Outcome>(CompiledQuery.raw(SEND_MANY, columns)),
      );
      outcomes = result.rows;
      if (outcomes.length !== batch.length) throw new Error('sluice_send_many returned a row per send');
    } catch (err) {
      // The server refused the call (a SQLSTATE): nothing committed, so each send runs alone and
      // meets its own error. Anything else (a lost connection) may have committed: report it as is.
      if (SQLSTATE.test(String((err as { code?: unknown }).code))) await Promise.all(batch.map(alone));
      else for (const w of batch) w.reject(err);
      return;
    }
    batch.forEach((w, i) => {
      const outcome = outcomes[i] as Outcome;
      if (outcome.error_code !== null) w.reject(sendError(outcome, lockTimeoutMs));
      else w.resolve({ rows: [{ seq: outcome.seq }] });
    });
  };

  const drain = async () => {
    try {
      while (queue.length > 0) await runBatch(queue.splice(0, maxBatch));
    } finally {
      busy = false;
    }
  };

  const enqueue = (parameters: readonly unknown[]) =>
    new Promise<QueryResult<unknown>>((resolve, reject) => {
      queue.push({ parameters, resolve, reject });
      if (busy) return;
      busy = true;
      setImmediate(() => void drain());
    });

  return new Proxy(db, {
    get(target, property) {
      if (property === 'executeQuery') {
        return (query: CompiledQuery) =>
          query.sql === SLUICE_SEND ? enqueue(query.parameters) : target.executeQuery(query);
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
