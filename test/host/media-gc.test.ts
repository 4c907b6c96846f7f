import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import type { HostContext } from '../../src/host/identity/context.js';
import { materializeMedia } from '../../src/host/media/materialize.js';
import { putMedia } from '../../src/host/media/media.js';
import { collectMediaGarbage, parseAge } from '../../src/host/media/media-gc.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { backendsUnderTest, dropSchema, emptySchema, freshSchemaUrl } from '../conformance/backend.js';
import { openTestHost, runCli, type TestHost } from '../support/host.js';

const DAY = 24 * 60 * 60 * 1000;

/** The same host, its clock moved forward: uploads made "now" look `ms` old. */
function later(ctx: HostContext, ms: number): HostContext {
  return { ...ctx, now: () => new Date(Date.now() + ms) };
}

async function blobShas(ctx: HostContext): Promise<Set<string>> {
  return new Set((await ctx.store.blobs.list()).map((b) => b.sha256));
}

async function shaOf(ctx: HostContext, attachmentId: string): Promise<string> {
  const row = await ctx.store.db
    .selectFrom('media')
    .select('sha256')
    .where('id', '=', attachmentId)
    .executeTakeFirstOrThrow();
  return row.sha256;
}

describe('parseAge', () => {
  test.each([
    ['30d', 30 * DAY],
    ['12h', 12 * 3_600_000],
    ['90m', 90 * 60_000],
    ['45s', 45_000],
    ['2w', 14 * DAY],
    ['0', 0],
  ])('%s is %d ms', (text, ms) => {
    expect(parseAge(text)).toBe(ms);
  });

  test.each(['', 'd', '30', '-1d', '1.5d', '30 days', '9999999d', '1y'])(
    'refuses %j with one line',
    (text) => {
      expect(() => parseAge(text)).toThrow(expect.objectContaining({ code: 'invalid_params' }));
    },
  );
});

describe('collectMediaGarbage', () => {
  let h: TestHost;
  beforeEach(async () => {
    h = await openTestHost();
    await h.agent('bot');
  });
  afterEach(async () => {
    await h.close();
  });

  const upload = (text: string, name = 'f.txt') =>
    putMedia(h.ctx, h.owner, new TextEncoder().encode(text), name);

  test('removes an old unreferenced upload (bytes and row), keeps a referenced one and a young one', async () => {
    const used = await upload('attached to a message');
    const orphan = await upload('never attached, long ago');
    await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'see', attachmentIds: [used.attachment_id] });
    const young = await collectMediaGarbage(h.ctx, { olderThanMs: DAY });
    expect(young.blobs.count).toBe(0);

    const orphanSha = await shaOf(h.ctx, orphan.attachment_id);
    const report = await collectMediaGarbage(later(h.ctx, 2 * DAY), { olderThanMs: DAY });
    expect(report.blobs).toEqual({ count: 1, bytes: 'never attached, long ago'.length, sha256: [orphanSha] });
    expect(await blobShas(h.ctx)).toEqual(new Set([await shaOf(h.ctx, used.attachment_id)]));
    const rows = await h.ctx.store.db.selectFrom('media').select('id').execute();
    expect(rows.map((r) => r.id)).toEqual([used.attachment_id]);
  });

  test('a dry run reports the same and changes nothing', async () => {
    await upload('orphan bytes');
    const before = await blobShas(h.ctx);
    const report = await collectMediaGarbage(later(h.ctx, 40 * DAY), { olderThanMs: 30 * DAY, dryRun: true });
    expect(report).toMatchObject({ dryRun: true, blobs: { count: 1, bytes: 12 } });
    expect(await blobShas(h.ctx)).toEqual(before);
    expect(await h.ctx.store.db.selectFrom('media').select('id').execute()).toHaveLength(1);
  });

  test('a fresh upload of old bytes keeps them: the newest upload decides the age', async () => {
    await upload('same bytes');
    await upload('same bytes', 'again.txt');
    const report = await collectMediaGarbage(h.ctx, { olderThanMs: DAY });
    expect(report.blobs.count).toBe(0);
  });

  test('removes the materialised copy of a collected blob and stale copies, keeps fresh ones of referenced blobs', async () => {
    const used = await upload('used');
    await upload('orphan');
    await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'see', attachmentIds: [used.attachment_id] });
    const rows = await h.ctx.store.db.selectFrom('media').selectAll().execute();
    for (const row of rows) await materializeMedia(h.ctx, row);
    const root = join(h.home, 'materialized');
    expect(readdirSync(root)).toHaveLength(2);

    const report = await collectMediaGarbage(later(h.ctx, 2 * DAY), { olderThanMs: 3 * DAY });
    expect(report.blobs.count).toBe(0); // the orphan is 2 days old: kept

    const collect = await collectMediaGarbage(later(h.ctx, 4 * DAY), { olderThanMs: 3 * DAY });
    expect(collect.blobs.count).toBe(1);
    expect(collect.materialized.count).toBe(2); // the orphan's copy, and the used one unused for 4 days
    expect(existsSync(root) ? readdirSync(root) : []).toEqual([]);
    expect(await blobShas(h.ctx)).toEqual(new Set([await shaOf(h.ctx, used.attachment_id)]));
  });
});

describe.each(backendsUnderTest())('media gc on %s', (backend) => {
  // On PostgreSQL every case uses one schema, emptied after it (a fresh schema per case cost the
  // server 1-2 s of migrations each); on SQLite every case has a fresh home.
  const target = backend === 'postgres' ? freshSchemaUrl('mediagc') : undefined;
  afterAll(async () => {
    if (target) await dropSchema(target.schema);
  });

  test('never deletes a blob that a message references, over random reference sets', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            text: fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
            attach: fc.boolean(),
          }),
          {
            minLength: 1,
            maxLength: 8,
          },
        ),
        fc.nat({ max: 3 }),
        async (uploads, messageCount) => {
          const t = await openTestHost({ db: target?.url });
          try {
            await t.agent('bot');
            const refs = [];
            for (const u of uploads)
              refs.push({
                ...(await putMedia(t.ctx, t.owner, new TextEncoder().encode(u.text), 'f.bin')),
                attach: u.attach,
              });
            const attached = refs.filter((r) => r.attach).map((r) => r.attachment_id);
            // Spread the references over several messages (some may carry none).
            for (let m = 0; m <= messageCount && attached.length > 0; m++) {
              const share = attached.filter((_, i) => i % (messageCount + 1) === m);
              if (share.length > 0)
                await sendMessage(t.ctx, t.owner, { to: 'bot', body: `m${m}`, attachmentIds: share });
            }
            const referenced = new Set<string>();
            for (const id of attached) referenced.add(await shaOf(t.ctx, id));
            const all = await blobShas(t.ctx);
            await collectMediaGarbage(later(t.ctx, 365 * DAY), { olderThanMs: 0 });
            const left = await blobShas(t.ctx);
            for (const sha of referenced) expect(left.has(sha)).toBe(true);
            for (const sha of all) if (!referenced.has(sha)) expect(left.has(sha)).toBe(false);
            for (const id of attached)
              expect(await t.ctx.store.blobs.get(await shaOf(t.ctx, id))).not.toBeNull();
          } finally {
            await t.close();
            if (target) await emptySchema(target.schema);
          }
        },
      ),
      { numRuns: 25 },
    );
  }, 120_000);
});

describe('sluice media gc', () => {
  test('reports what it would free and what it freed, in one line', async () => {
    const h = await openTestHost();
    try {
      await putMedia(h.ctx, h.owner, new TextEncoder().encode('x'.repeat(2048)), 'big.txt');
      await h.ctx.store.close();
      const dry = await runCli(['media', 'gc', '--older-than', '0', '--dry-run'], { home: h.home });
      expect(dry).toMatchObject({
        code: 0,
        stdout: 'media gc would free 1 blob(s), 2.0 KiB; 0 materialised copies, 0 B\n',
      });
      const real = await runCli(['media', 'gc', '--older-than', '0', '--json'], { home: h.home });
      expect(JSON.parse(real.stdout)).toMatchObject({ dryRun: false, blobs: { count: 1, bytes: 2048 } });
      const again = await runCli(['media', 'gc', '--older-than', '0'], { home: h.home });
      expect(again.stdout).toBe('media gc freed 0 blob(s), 0 B; 0 materialised copies, 0 B\n');
      const bad = await runCli(['media', 'gc', '--older-than', 'soon'], { home: h.home });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/^sluice: invalid_params: --older-than must look like 30d/);
      expect(bad.stderr.split('\n')).toHaveLength(2);
    } finally {
      await h.close().catch(() => {});
    }
  });
});
