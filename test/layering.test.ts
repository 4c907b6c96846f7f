import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/host.js';

const LAYERS = ['core', 'store', 'host', 'surfaces'] as const;
type Layer = (typeof LAYERS)[number];

/** Which layers each layer may import (DESIGN.md §7: core ← store ← host ← surfaces). */
const ALLOWED: Record<Layer, readonly Layer[]> = {
  core: ['core'],
  store: ['store', 'core'],
  host: ['host', 'store', 'core'],
  surfaces: ['surfaces', 'host', 'store', 'core'],
};

const NODE_IO =
  /^(node:)?(fs|fs\/promises|net|http|https|child_process|os|path|process|dgram|tls|worker_threads)$/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [
    ...text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g),
  ];
  return specs.map((m) => (m[1] ?? m[2]) as string);
}

function layerOf(path: string): Layer | undefined {
  const rel = relative(join(REPO_ROOT, 'src'), path).split(/[/\\]/)[0];
  return LAYERS.find((l) => l === rel);
}

/** Query-builder calls, the raw SQL tag and Kysely itself: what only src/store may use. */
const QUERY_BUILDER: readonly [string, RegExp][] = [
  ['a Kysely import', /from\s+['"]kysely['"]/],
  [
    'a query-builder call',
    /\.\s*(selectFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto|selectNoFrom)\s*\(/,
  ],
  ['the sql tag', /\bsql\s*(`|<)/],
];

/** Holding the database: the handle, a transaction, a store op or a driver. Surfaces go through src/host. */
const DATABASE_HANDLE: readonly [string, RegExp][] = [
  ['the database handle', /\b(ctx|host)\.store\.(db|transaction)\b/],
  ['a store op import', /from\s+['"][./]*\/store\/ops\//],
  ['a database driver import', /from\s+['"](better-sqlite3|pg)['"]/],
];

/**
 * Files allowed to break those rules for now, each with its reason. An entry that no longer breaks
 * a rule fails the test, so the list only shrinks.
 */
const QUERY_EXCEPTIONS: Record<string, string> = {};

const HANDLE_EXCEPTIONS: Record<string, string> = {
  // The hook and the waiter start fast: one read-only SQLite connection, no Kysely (README).
  'src/surfaces/hooks/sqlite-pending.ts': 'hook fast path',
  'src/surfaces/hooks/wait-sources.ts': 'wake fast path (PRAGMA data_version)',
};

/** Cursor tokens are signed and parsed only in host/cursors.ts (one schema per kind). */
const CURSOR_MODULE = 'src/host/cursors.ts';
const RAW_CURSOR: readonly [string, RegExp][] = [['a raw cursor call', /\b(encodeCursor|decodeCursor)\s*\(/]];
const CURSOR_EXCEPTIONS: Record<string, string> = {
  // On every CLI command's import path (`message ls` resolves targets here): host/cursors.ts loads
  // zod, which the fast CLI start (test/cli/cli-start.test.ts) keeps out of the message commands.
  'src/host/channels.ts': 'fast CLI start',
  // Imported by host/channels.ts (a create or add invites), so on the same fast path.
  'src/host/invitations.ts': 'fast CLI start',
};

/**
 * Asking at run time which database this is: src/store/ops call the store's dialect instead
 * (`StoreDialect`, src/store/store.ts), which src/store/sqlite and src/store/postgres implement.
 */
const DIALECT_CHECK: readonly [string, RegExp][] = [
  ['a dialect folder import', /['"](?:\.\.\/)+(?:store\/)?(?:sqlite|postgres)\//],
  ['a Kysely adapter or dialect test', /\b(?:Postgres|Sqlite|Mysql|Mssql)(?:Adapter|Dialect)\b|\.adapter\b/],
  [
    'a dialect name test',
    /\bdialect\s*[!=]==?|[!=]==?\s*['"](?:sqlite|postgres(?:ql)?)['"]|['"](?:sqlite|postgres(?:ql)?)['"]\s*[!=]==?/,
  ],
  ['an is-this-database test', /\bis(?:Postgres|Pg|Sqlite)\w*\s*\(/],
];

/**
 * Host rooms with a front door: code outside the folder imports it only through its index.ts
 * (docs/architecture.md). The turn protocol is the first; others join as they get a folder.
 */
const FRONT_DOORS = ['src/host/turns'];

/** The import of a room's inner module from outside the room, if `target` is one. */
function pastTheDoor(file: string, target: string): string | undefined {
  const from = relative(REPO_ROOT, file);
  const to = relative(REPO_ROOT, target);
  return FRONT_DOORS.find(
    (room) => to.startsWith(`${room}/`) && to !== `${room}/index.ts` && !from.startsWith(`${room}/`),
  );
}

/** The relative imports of `file` as the source files they name (`.js` written, `.ts` on disk). */
function localImportsOf(file: string): string[] {
  return importsOf(file)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => resolve(file, '..', spec).replace(/\.js$/, '.ts'));
}

/** One import circle in `graph` (its files in order, the first repeated at the end), or null. */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (node: string): string[] | null => {
    if (onPath.has(node)) return [...path.slice(path.indexOf(node)), node];
    if (done.has(node)) return null;
    path.push(node);
    onPath.add(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    onPath.delete(node);
    done.add(node);
    return null;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return null;
}

function breaches(text: string, rules: readonly [string, RegExp][]): string[] {
  return rules.filter(([, pattern]) => pattern.test(text)).map(([what]) => what);
}

describe('layering', () => {
  const files = sourceFiles(join(REPO_ROOT, 'src'));

  it('finds source files in every layer', () => {
    for (const layer of LAYERS) expect(files.some((f) => layerOf(f) === layer)).toBe(true);
  });

  it.each(files.map((f) => [relative(REPO_ROOT, f), f]))(
    '%s imports only from the layers below it',
    (_name, file) => {
      const from = layerOf(file);
      if (!from) return;
      for (const spec of importsOf(file)) {
        if (!spec.startsWith('.')) continue;
        const target = layerOf(resolve(file, '..', spec));
        if (!target) continue;
        expect(ALLOWED[from], `${relative(REPO_ROOT, file)} imports ${spec}`).toContain(target);
      }
    },
  );

  it('keeps core pure: no file system, network, process or clock imports', () => {
    for (const file of files.filter((f) => layerOf(f) === 'core')) {
      for (const spec of importsOf(file)) {
        expect(NODE_IO.test(spec), `${relative(REPO_ROOT, file)} imports ${spec}`).toBe(false);
      }
      const text = readFileSync(file, 'utf8');
      expect(
        /Date\.now\(|new Date\(|Math\.random\(|process\./.test(text),
        `${relative(REPO_ROOT, file)} reads the clock, randomness or process`,
      ).toBe(false);
    }
  });

  const hostAndSurfaces = files.filter((f) => layerOf(f) === 'host' || layerOf(f) === 'surfaces');

  it.each(hostAndSurfaces.map((f) => [relative(REPO_ROOT, f), f]))(
    '%s leaves SQL to src/store/ops (no Kysely, no query builder, no sql tag)',
    (name, file) => {
      const found = breaches(readFileSync(file, 'utf8'), QUERY_BUILDER);
      if (name in QUERY_EXCEPTIONS)
        expect(found, `${name} is listed as an exception but needs none`).not.toEqual([]);
      else expect(found, name).toEqual([]);
    },
  );

  const surfaces = files.filter((f) => layerOf(f) === 'surfaces');

  it.each(surfaces.map((f) => [relative(REPO_ROOT, f), f]))(
    '%s reaches the database only through src/host',
    (name, file) => {
      const found = breaches(readFileSync(file, 'utf8'), DATABASE_HANDLE);
      if (name in HANDLE_EXCEPTIONS)
        expect(found, `${name} is listed as an exception but needs none`).not.toEqual([]);
      else expect(found, name).toEqual([]);
    },
  );

  it.each(hostAndSurfaces.map((f) => [relative(REPO_ROOT, f), f]))(
    '%s issues and reads cursors through host/cursors.ts',
    (name, file) => {
      if (name === CURSOR_MODULE) return;
      const found = breaches(readFileSync(file, 'utf8'), RAW_CURSOR);
      if (name in CURSOR_EXCEPTIONS)
        expect(found, `${name} is listed as an exception but needs none`).not.toEqual([]);
      else expect(found, name).toEqual([]);
    },
  );

  const storeOps = files.filter(
    (f) => relative(join(REPO_ROOT, 'src/store/ops'), f).split(/[/\\]/)[0] !== '..',
  );

  it('finds the store ops', () => {
    expect(storeOps.length).toBeGreaterThan(10);
  });

  it.each(storeOps.map((f) => [relative(REPO_ROOT, f), f]))(
    '%s never asks which database it runs on (no dialect import or check)',
    (name, file) => {
      expect(breaches(readFileSync(file, 'utf8'), DIALECT_CHECK), name).toEqual([]);
    },
  );

  it.each(files.map((f) => [relative(REPO_ROOT, f), f]))(
    '%s enters a room with a front door only through its index.ts',
    (name, file) => {
      const past = localImportsOf(file).filter((target) => pastTheDoor(file, target) !== undefined);
      expect(
        past.map((t) => relative(REPO_ROOT, t)),
        name,
      ).toEqual([]);
    },
  );

  it('catches an import past a front door when planted', () => {
    const outside = join(REPO_ROOT, 'src/surfaces/drivers/loop.ts');
    const inside = join(REPO_ROOT, 'src/host/turns/receipts.ts');
    expect(pastTheDoor(outside, join(REPO_ROOT, 'src/host/turns/session.ts'))).toBe('src/host/turns');
    expect(pastTheDoor(outside, join(REPO_ROOT, 'src/host/turns/index.ts'))).toBeUndefined();
    expect(pastTheDoor(inside, join(REPO_ROOT, 'src/host/turns/lifecycle.ts'))).toBeUndefined();
    for (const room of FRONT_DOORS) expect(existsSync(join(REPO_ROOT, room, 'index.ts')), room).toBe(true);
  });

  it('has no import circle in src/store', () => {
    const store = files.filter((f) => layerOf(f) === 'store');
    const graph = new Map(store.map((f) => [f, localImportsOf(f).filter((t) => store.includes(t))]));
    const cycle = findCycle(graph);
    expect(cycle?.map((f) => relative(REPO_ROOT, f)).join(' → ') ?? null).toBeNull();
  });

  it('catches a dialect check and an import circle when planted', () => {
    expect(breaches("import { f } from '../postgres/commit-order.js';", DIALECT_CHECK)).toEqual([
      'a dialect folder import',
    ]);
    expect(breaches('if (db.getExecutor().adapter instanceof PostgresAdapter)', DIALECT_CHECK)).toEqual([
      'a Kysely adapter or dialect test',
    ]);
    expect(breaches("if (store.dialect === 'postgres')", DIALECT_CHECK)).toEqual(['a dialect name test']);
    expect(breaches("kind !== 'sqlite'", DIALECT_CHECK)).toEqual(['a dialect name test']);
    expect(breaches('if (isPostgres(db))', DIALECT_CHECK)).toEqual(['an is-this-database test']);
    expect(breaches('return dialectOf(db).lastEventSeq(db);', DIALECT_CHECK)).toEqual([]);
    const graph = new Map([
      ['ops/events', ['store', 'postgres/commit-order']],
      ['postgres/commit-order', ['store', 'ops/events']],
      ['store', []],
    ]);
    expect(findCycle(graph)).toEqual(['ops/events', 'postgres/commit-order', 'ops/events']);
    expect(
      findCycle(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toBeNull();
  });

  it('lists only files that exist as exceptions', () => {
    const names = new Set(files.map((f) => relative(REPO_ROOT, f)));
    for (const name of [QUERY_EXCEPTIONS, HANDLE_EXCEPTIONS, CURSOR_EXCEPTIONS].flatMap(Object.keys))
      expect(names.has(name), name).toBe(true);
  });

  it('catches each kind of query and handle use when planted', () => {
    expect(breaches("import { sql } from 'kysely';", QUERY_BUILDER)).toContain('a Kysely import');
    expect(breaches('await db\n  .selectFrom("inbox")', QUERY_BUILDER)).toEqual(['a query-builder call']);
    expect(breaches('sql<string>`substr(body, 1, 10)`', QUERY_BUILDER)).toEqual(['the sql tag']);
    expect(breaches('listX(session.ctx.store.db, id)', DATABASE_HANDLE)).toEqual(['the database handle']);
    expect(breaches("import { f } from '../../store/ops/inbox.js';", DATABASE_HANDLE)).toEqual([
      'a store op import',
    ]);
    // A configured store location is not the handle.
    expect(breaches('env.SLUICE_DB = options.store.db;', DATABASE_HANDLE)).toEqual([]);
  });

  it('detects a violation when one is planted', () => {
    // Guards the checker itself: a store file importing the host must be flagged.
    const fake = join(REPO_ROOT, 'src/store/fake.ts');
    const target = layerOf(resolve(fake, '..', '../host/context.js'));
    expect(ALLOWED.store).not.toContain(target);
  });
});
