import { type Compilable, type CompiledQuery, createQueryId } from 'kysely';
import type { Db } from './store.js';

/** Where a call's argument goes in a query built once: the builder sees these instead of values. */
class Slot {
  constructor(readonly index: number) {}
}

/** A compiled query whose parameters are either a call's argument (by index) or a constant. */
interface Template {
  readonly query: CompiledQuery['query'];
  readonly sql: string;
  readonly parameters: readonly (Slot | { readonly value: unknown })[];
}

/** A query built and compiled once per database dialect, run with each call's arguments. */
export interface Precompiled<A extends unknown[], O> {
  /** Every row. */
  all(db: Db, ...args: A): Promise<O[]>;
  /** The first row, if any. */
  first(db: Db, ...args: A): Promise<O | undefined>;
  /** Runs it; the number of rows it changed (0 when the driver does not say). */
  run(db: Db, ...args: A): Promise<number>;
}

/**
 * Builds `build`'s query once per database dialect and reuses its SQL: Kysely otherwise builds and
 * compiles the query tree on every call, which costs more than running most of the hot path's
 * small statements (better-sqlite3 already reuses the prepared statement by SQL text, driver.ts).
 *
 * `build` is called with stand-ins for its arguments, so it must use each only as a bound value
 * (in `where`, `values`, `set`, `limit`): never in a condition, a list (`in`), an identifier or a
 * `sql` fragment's text. A stand-in that does not reach the parameters (a misuse) throws at the
 * first call. `build` declares each argument (no rest or default parameters: its `length` counts
 * them), or `argumentCount` says how many it takes. Neither may the query's shape depend on `db` beyond its dialect (not on whether it
 * is a transaction: build one query per variant instead).
 */
export function precompile<A extends unknown[], O>(
  build: (db: Db, ...args: A) => Compilable<O>,
  argumentCount: number = build.length - 1,
): Precompiled<A, O> {
  // Kysely's adapter is one object per store, shared by its transactions and every other handle.
  const templates = new WeakMap<object, Template>();
  const templateFor = (db: Db): Template => {
    const adapter = db.getExecutor().adapter;
    let template = templates.get(adapter);
    if (template) return template;
    const slots = Array.from({ length: argumentCount }, (_, i) => new Slot(i));
    const compiled = build(db, ...(slots as unknown as A)).compile();
    const parameters = compiled.parameters.map((p) => (p instanceof Slot ? p : { value: p }));
    const used = new Set(parameters.filter((p) => p instanceof Slot));
    if (used.size !== slots.length)
      throw new Error(`a precompiled query uses ${used.size} of its ${slots.length} arguments as values`);
    template = { query: compiled.query, sql: compiled.sql, parameters };
    templates.set(adapter, template);
    return template;
  };
  const execute = (db: Db, args: unknown[]) => {
    // A plugin (a test's statement counter) transforms each query as it is compiled: build it anew.
    if (db.getExecutor().plugins.length > 0) return db.executeQuery<O>(build(db, ...(args as A)));
    const template = templateFor(db);
    return db.executeQuery<O>({
      query: template.query,
      queryId: createQueryId(),
      sql: template.sql,
      parameters: template.parameters.map((p) => (p instanceof Slot ? args[p.index] : p.value)),
    });
  };
  return {
    all: async (db, ...args) => (await execute(db, args)).rows,
    first: async (db, ...args) => (await execute(db, args)).rows[0],
    run: async (db, ...args) => Number((await execute(db, args)).numAffectedRows ?? 0),
  };
}
