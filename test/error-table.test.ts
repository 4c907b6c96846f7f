import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_TABLE, oneLine, renderingOf, SluiceError, type SluiceErrorCode } from '../src/core/errors.js';
import { errorTextFor } from '../src/host/reads/index.js';
import { exitCodeFor } from '../src/surfaces/cli/io.js';
import { httpError } from '../src/surfaces/http/status.js';
import { toRpcError } from '../src/surfaces/rpc/errors.js';
import { REPO_ROOT } from './support/host.js';

const CODES = Object.keys(ERROR_TABLE) as SluiceErrorCode[];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

describe('one error table: code → JSON-RPC code, HTTP status, exit code, MCP result', () => {
  it.each(CODES)('%s has all four', (code) => {
    const r = ERROR_TABLE[code];
    expect(Number.isInteger(r.rpc) && r.rpc < 0).toBe(true);
    expect(r.http >= 400 && r.http <= 599).toBe(true);
    expect([1, 2, 70]).toContain(r.exit);
    expect(r.mcp.isError).toBe(true);
    expect(['shown', 'generic']).toContain(r.mcp.message);
  });

  it('gives every code its own JSON-RPC code', () => {
    expect(new Set(CODES.map((c) => ERROR_TABLE[c].rpc)).size).toBe(CODES.length);
  });

  it.each(CODES)('%s: every surface answers as the table says', (code) => {
    const err = new SluiceError(code, 'first line\nsecond line');
    const r = ERROR_TABLE[code];
    const rpc = toRpcError(err);
    expect([rpc.code, rpc.data.code, rpc.message]).toEqual([r.rpc, code, 'first line second line']);
    expect(httpError(err).status).toBe(r.http);
    expect(httpError(err).body.error.code).toBe(code);
    expect(exitCodeFor(code)).toBe(r.exit);
    const mcp = JSON.parse(errorTextFor(err, 12_000).text) as { error: { code: string; message: string } };
    if (r.mcp.message === 'shown') expect(mcp.error).toEqual({ code, message: 'first line\nsecond line' });
    else expect(mcp.error.message).not.toContain('first line');
  });

  it('renders an unknown code and a bug as internal', () => {
    expect(renderingOf('no_such_code')).toBe(ERROR_TABLE.internal);
    expect(toRpcError(new TypeError('boom')).code).toBe(ERROR_TABLE.internal.rpc);
    expect(httpError(new TypeError('boom')).status).toBe(500);
    expect(JSON.parse(errorTextFor(new TypeError('boom'), 12_000).text).error.code).toBe('internal');
  });

  // A fault outside the process (full disk, I/O error, database gone) is weather: `unavailable`
  // with its cause on every surface, never `internal` (issue 22).
  it.each([
    [
      Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }),
      /^disk full: .*SQLITE_FULL/,
    ],
    [Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }), /^disk full: .*ENOSPC/],
    // What SQLite says when the -shm file of a WAL database cannot grow: opening it on a full disk.
    [
      Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_SHMSIZE' }),
      /^disk full: the database's shared-memory file \(-shm\) could not be written \(SQLITE_IOERR_SHMSIZE\); free some space/,
    ],
    [Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_WRITE' }), /^disk I\/O error/],
    [Object.assign(new Error('file is not a database'), { code: 'SQLITE_NOTADB' }), /not a SQLite database/],
    [
      Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT' }),
      /^the database file is damaged .*SQLITE_CORRUPT/,
    ],
    [Object.assign(new Error('relation "messages" does not exist'), { code: '42P01' }), /schema is gone/],
    [Object.assign(new Error('terminating connection'), { code: '57P01' }), /shutting down or restarting/],
    // With the session's lock_timeout noted by the store (lock-timeout.ts), the line states it.
    [
      Object.assign(new Error('canceling statement due to lock timeout'), {
        code: '55P03',
        lockTimeoutMs: 10_000,
      }),
      /^the database is busy: another session held a lock for 10 s; nothing was changed, try again$/,
    ],
    [
      Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' }),
      /^the database is busy: another session held a lock past its lock_timeout; nothing was changed, try again$/,
    ],
    [new Error('Connection terminated unexpectedly'), /connection was lost/],
    // A file the system refused (Node's fs errors carry the path and the call).
    [
      Object.assign(new Error("EACCES: permission denied, open '/h/blobs/x'"), {
        code: 'EACCES',
        syscall: 'open',
        path: '/h/blobs/x',
      }),
      /^cannot open \/h\/blobs\/x \(permission denied\)$/,
    ],
    [
      Object.assign(new Error("EROFS: read-only file system, mkdir '/h/tmp'"), {
        code: 'EROFS',
        syscall: 'mkdir',
        path: '/h/tmp',
      }),
      /^cannot create \/h\/tmp \(read-only file system\)$/,
    ],
    [
      Object.assign(new Error("EPERM: operation not permitted, rename '/h/a'"), {
        code: 'EPERM',
        syscall: 'rename',
        path: '/h/a',
      }),
      /^cannot write \/h\/a \(permission denied\)$/,
    ],
  ])('renders the store fault %s as unavailable everywhere', (err, line) => {
    const r = ERROR_TABLE.unavailable;
    const rpc = toRpcError(err);
    expect([rpc.code, rpc.data.code]).toEqual([r.rpc, 'unavailable']);
    expect(rpc.message).toMatch(line);
    expect(httpError(err)).toMatchObject({ status: r.http, body: { error: { code: 'unavailable' } } });
    expect(httpError(err).body.error.message).toMatch(line);
    const mcp = JSON.parse(errorTextFor(err, 12_000).text) as { error: { code: string; message: string } };
    expect(mcp.error.code).toBe('unavailable');
    expect(mcp.error.message).toMatch(line);
  });

  it('leaves other driver errors (a constraint, a syntax error) as bugs', () => {
    for (const code of ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_ERROR', '23505', '42601']) {
      const err = Object.assign(new Error('x'), { code });
      expect(toRpcError(err).code).toBe(ERROR_TABLE.internal.rpc);
    }
  });

  it('folds a message into one line of at most 500 characters', () => {
    expect(oneLine('a\r\nb\nc')).toBe('a b c');
    expect(oneLine('x'.repeat(600))).toHaveLength(500);
  });

  it('covers every code the source throws', () => {
    const thrown = new Set<string>();
    for (const file of sourceFiles(join(REPO_ROOT, 'src'))) {
      for (const m of readFileSync(file, 'utf8').matchAll(/new SluiceError\(\s*'([a-z_]+)'/g))
        thrown.add(m[1] as string);
    }
    expect(thrown.size).toBeGreaterThan(5);
    for (const code of thrown) expect(CODES, code).toContain(code);
  });
});
