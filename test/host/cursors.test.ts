import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/core/cursor.js';
import {
  BODY_PART_CURSOR,
  CONTENT_CURSOR,
  type CursorKind,
  HISTORY_CURSOR,
  issueCursor,
  NAME_CURSOR,
  QUEUE_PAGE_CURSOR,
  READ_PAGE_CURSOR,
  readCursor,
} from '../../src/host/reads/cursors.js';
import { openTestHost, type TestHost } from '../support/host.js';

const binding = { caller: 'p_1', filter: 'f', target: 't' };

const KINDS: [CursorKind<Record<string, unknown>>, Record<string, unknown>, Record<string, unknown>][] = [
  [READ_PAGE_CURSOR as never, { k: 7 }, { k: -1 }],
  [CONTENT_CURSOR as never, { o: 12 }, { o: 1.5 }],
  [
    QUEUE_PAGE_CURSOR as never,
    { a: 'p_2', g: 'g', f: '{}', d: 'after', p: 3, m: 'm_1', s: 'waiting' },
    { a: 'p_2', g: 'g', f: '{}', d: 'sideways', p: 3, m: 'm_1', s: 'waiting' },
  ],
  [BODY_PART_CURSOR as never, { o: 0, r: 2 }, { o: '0', r: 2 }],
  [HISTORY_CURSOR as never, { b: 41 }, { b: 'x' }],
  [NAME_CURSOR as never, { after: 'general' }, { after: 3 }],
];

describe('one cursor module: one schema per kind', () => {
  let t: TestHost;
  beforeAll(async () => {
    t = await openTestHost();
  });
  afterAll(async () => t.close());

  it.each(KINDS.map(([kind, good, bad]) => [kind.name, kind, good, bad] as const))(
    '%s: round-trips its payload and refuses a well-signed one of the wrong shape with one line',
    (_name, kind, good, bad) => {
      expect(readCursor(t.ctx, kind, binding, issueCursor(t.ctx, kind, binding, good))).toEqual(good);
      const forged = encodeCursor(t.ctx.cursorSecret, binding, bad);
      expect(() => readCursor(t.ctx, kind, binding, forged)).toThrow(kind.refusal);
    },
  );

  it('refuses a token bound to something else, with the hint when given', () => {
    const token = issueCursor(t.ctx, CONTENT_CURSOR, binding, { o: 1 });
    expect(() =>
      readCursor(t.ctx, CONTENT_CURSOR, { ...binding, target: 'other' }, token, 'read it again'),
    ).toThrow(/signature mismatch.*; read it again/);
  });
});
