import { type Compilable, type CompiledQuery, createQueryId } from 'kysely';
import type { Db } from './store.js';

/** Longest list a template is kept for (pages hold up to 100 rows); longer lists build per call. */
const MAX_KEPT_LIST = 100;

/**
 * Where a call's argument goes in a query built once: the builder sees these instead of values.
 * An argument that is an array stands in as an array with a slot per element (an `in` list), or,
 * for an array of rows (a multi-row insert), a row of slots per element, one per column.
 */
class Slot {
  constructor(
    readonly index: number,
    readonly element?: number,
    readonly column?: string,
  ) {}
}

/** A row of a multi-row argument: a plain object whose columns are all bound values. */
function isRow(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * What a template is kept under for these arguments: each array's length and, for rows, their
 * columns; undefined when rows differ in their columns (such a call is built anew).
 */
function shapeOf(args: readonly unknown[]): string | undefined {
  let shape = '';
  for (const arg of args) {
    shape += ',';
    if (!Array.isArray(arg)) continue;
    shape += arg.length;
    if (!isRow(arg[0])) continue;
    const columns = Object.keys(arg[0]).join(' ');
    if (arg.some((row) => !isRow(row) || Object.keys(row).join(' ') !== columns)) return undefined;
    shape += `:${columns}`;
  }
  return shape;
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
 * fragment's text. An array argument is a list of bound values (`in`), or of rows whose every
 * column is a bound value (`values` of a multi-row insert; each row with the same columns, given
 * even when null, or the call is built anew). The query is built once per length of each array
 * argument (and its rows' columns), so a list must not be empty (an empty `in` list is no SQL).
 * A stand-in that does not reach the parameters (a misuse) throws at the first call. `build`
 * declares each argument (no rest or default parameters: its `length` counts them), or
 * `argumentCount` says how many it takes. Neither may the query's shape depend on `db` beyond its
 * dialect (not on whether it is a transaction: build one query per variant instead).
 */
export function precompile<A extends unknown[], O>(
  build: (db: Db, ...args: A) => Compilable<O>,
  argumentCount: number = build.length - 1,
): Precompiled<A, O> {
  // Kysely's adapter is one object per store, shared by its transactions and every other handle;
  // under it, one template per shape of the arguments (the lengths of the array ones).
  const templates = new WeakMap<object, Map<string, Template>>();
  const templateFor = (db: Db, args: unknown[], shape: string): Template => {
    const adapter = db.getExecutor().adapter;
    let byShape = templates.get(adapter);
    if (!byShape) {
      byShape = new Map();
      templates.set(adapter, byShape);
    }
    let template = byShape.get(shape);
    if (template) return template;
    const slots: Slot[] = [];
    const slot = (s: Slot) => {
      slots.push(s);
      return s;
    };
    const standIns = Array.from({ length: argumentCount }, (_, i) => {
      const arg = args[i];
      if (!Array.isArray(arg)) return slot(new Slot(i));
      if (arg.length === 0) throw new Error('a precompiled query was given an empty list');
      return arg.map((element, j) =>
        isRow(element)
          ? Object.fromEntries(Object.keys(element).map((column) => [column, slot(new Slot(i, j, column))]))
          : slot(new Slot(i, j)),
      );
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
  const argumentAt = (slot: Slot, args: unknown[]) => {
    if (slot.element === undefined) return args[slot.index];
    const element = (args[slot.index] as unknown[])[slot.element];
    return slot.column === undefined ? element : (element as Record<string, unknown>)[slot.column];
  };
  const execute = (db: Db, args: unknown[]) => {
    // A plugin (a test's statement counter) transforms each query as it is compiled, and a long
    // list would keep a template per length: build those anew.
    const shape = shapeOf(args);
    if (
      shape === undefined ||
      db.getExecutor().plugins.length > 0 ||
      args.some((a) => Array.isArray(a) && a.length > MAX_KEPT_LIST)
    )
      return db.executeQuery<O>(build(db, ...(args as A)));
    const template = templateFor(db, args, shape);
    return db.executeQuery<O>({
      query: template.query,
      queryId: createQueryId(),
      sql: template.sql,
      parameters: template.parameters.map((p) => (p instanceof Slot ? argumentAt(p, args) : p.value)),
    });
  };
  return {
    all: async (db, ...args) => (await execute(db, args)).rows,
    first: async (db, ...args) => (await execute(db, args)).rows[0],
    run: async (db, ...args) => Number((await execute(db, args)).numAffectedRows ?? 0),
  };
}
