import { type Compilable, type CompiledQuery, createQueryId } from 'kysely';
import type { Db } from './store.js';

/** Longest list a template is kept for (pages hold up to 100 rows); longer lists build per call. */
const MAX_KEPT_LIST = 100;

/**
 * Where a call's argument goes in a query built once: the builder sees these instead of values.
 * An argument that is an array (an `in` list) stands in as an array of slots, one per element.
 */
class Slot {
  constructor(
    readonly index: number,
    readonly element?: number,
  ) {}
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
 * (in `where`, `values`, `set`, `limit`): never in a condition, an identifier or a `sql`
 * fragment's text. An array argument is a list of bound values (`in`): the query is built once
 * per length of each array argument, so it must not be empty (an empty `in` list is no SQL). A stand-in that does not reach the parameters (a misuse) throws at the
 * first call. `build` declares each argument (no rest or default parameters: its `length` counts
 * them), or `argumentCount` says how many it takes. Neither may the query's shape depend on `db` beyond its dialect (not on whether it
 * is a transaction: build one query per variant instead).
 */
export function precompile<A extends unknown[], O>(
  build: (db: Db, ...args: A) => Compilable<O>,
  argumentCount: number = build.length - 1,
): Precompiled<A, O> {
  // Kysely's adapter is one object per store, shared by its transactions and every other handle;
  // under it, one template per shape of the arguments (the lengths of the array ones).
  const templates = new WeakMap<object, Map<string, Template>>();
  const templateFor = (db: Db, args: unknown[]): Template => {
    const adapter = db.getExecutor().adapter;
    let byShape = templates.get(adapter);
    if (!byShape) {
      byShape = new Map();
      templates.set(adapter, byShape);
    }
    const shape = args.map((a) => (Array.isArray(a) ? a.length : '')).join(',');
    let template = byShape.get(shape);
    if (template) return template;
    const slots: Slot[] = [];
    const standIns = Array.from({ length: argumentCount }, (_, i) => {
      const arg = args[i];
      if (!Array.isArray(arg)) return slots[slots.push(new Slot(i)) - 1];
      if (arg.length === 0) throw new Error('a precompiled query was given an empty list');
      return arg.map((_, j) => slots[slots.push(new Slot(i, j)) - 1]);
    });
    const compiled = build(db, ...(standIns as unknown as A)).compile();
    const parameters = compiled.parameters.map((p) => (p instanceof Slot ? p : { value: p }));
    const used = new Set(parameters.filter((p) => p instanceof Slot));
    if (used.size !== slots.length)
      throw new Error(`a precompiled query uses ${used.size} of its ${slots.length} arguments as values`);
    template = { query: compiled.query, sql: compiled.sql, parameters };
    byShape.set(shape, template);
    return template;
  };
  const valueOf = (slot: Slot, args: unknown[]) =>
    slot.element === undefined ? args[slot.index] : (args[slot.index] as unknown[])[slot.element];
  const execute = (db: Db, args: unknown[]) => {
    // A plugin (a test's statement counter) transforms each query as it is compiled, and a long
    // list would keep a template per length: build those anew.
    if (db.getExecutor().plugins.length > 0 || args.some((a) => Array.isArray(a) && a.length > MAX_KEPT_LIST))
      return db.executeQuery<O>(build(db, ...(args as A)));
    const template = templateFor(db, args);
    return db.executeQuery<O>({
      query: template.query,
      queryId: createQueryId(),
      sql: template.sql,
      parameters: template.parameters.map((p) => (p instanceof Slot ? valueOf(p, args) : p.value)),
    });
  };
  return {
    all: async (db, ...args) => (await execute(db, args)).rows,
    first: async (db, ...args) => (await execute(db, args)).rows[0],
    run: async (db, ...args) => Number((await execute(db, args)).numAffectedRows ?? 0),
  };
}
