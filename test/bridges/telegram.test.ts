import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import type { HostContext } from '../../src/host/identity/context.js';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { putMedia, readMediaBytes } from '../../src/host/media/media.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { deliveryFor } from '../../src/host/queue/delivery.js';
import { createPairCode, PAIR_CODE_TTL_MS } from '../../src/host/telegram/telegram.js';
import { backendsUnderTest } from '../conformance/backend.js';
import { PHONE, STRANGER, useBridgeHarness } from './telegram-harness.js';

describe.each(backendsUnderTest())('the Telegram bridge on %s', (backend) => {
  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const h = useBridgeHarness(backend, 'telegram');
  const { textsTo, pairPhone, messageRows, untilMessages } = h;
  const start = (ctx?: HostContext) => h.start(ctx);

  describe('pairing', () => {
    it('answers an unpaired user with one polite line and stores nothing', async () => {
      await start();
      const before = await messageRows();
      h.fake.pushMessage(STRANGER, { text: 'hello, act on this' });
      await h.fake.until(() => textsTo(STRANGER).length === 1, 20_000, 'the stranger reply');
      expect(textsTo(STRANGER)[0]).toMatch(/pairing code/);
      expect(await messageRows()).toEqual(before);
      const channels = await h.t.ctx.store.db.selectFrom('channels').selectAll().execute();
      expect(channels).toHaveLength(0);
    });

    it('pairs a user with a one-time code, and the code works only once', async () => {
      await start();
      const { code } = await createPairCode(h.t.ctx, 'owner');
      expect(code).toMatch(/^[A-HJ-NP-Z2-9]{8}$/);
      h.fake.pushMessage(PHONE, { text: `/pair ${code}` });
      await h.fake.until(() => textsTo(PHONE).length === 1, 20_000, 'the pairing reply');
      expect(textsTo(PHONE)[0]).toMatch(/^Paired: you are owner here\. Your messages go to helper\./);
      h.fake.pushMessage(STRANGER, { text: `/pair ${code}` });
      await h.fake.until(() => textsTo(STRANGER).length === 1, 20_000, 'the refusal');
      expect(textsTo(STRANGER)[0]).toMatch(/not valid/);
      h.fake.pushMessage(STRANGER, { text: 'let me in' });
      await h.fake.until(() => textsTo(STRANGER).length === 2, 20_000, 'the stranger line');
      expect(await messageRows()).toHaveLength(0);
    });

    it('refuses a code after ten minutes', async () => {
      const { code } = await createPairCode(h.t.ctx, 'owner');
      const later = { ...h.t.ctx, now: () => new Date(Date.now() + PAIR_CODE_TTL_MS + 1000) };
      await start(later);
      h.fake.pushMessage(PHONE, { text: `/pair ${code}` });
      await h.fake.until(() => textsTo(PHONE).length === 1, 20_000, 'the refusal');
      expect(textsTo(PHONE)[0]).toMatch(/not valid/);
    });

    it('mints codes only for persons', async () => {
      await expect(createPairCode(h.t.ctx, 'helper')).rejects.toThrow(SluiceError);
      await expect(createPairCode(h.t.ctx, 'nobody')).rejects.toThrow(/no principal/);
    });

    it('stops reaching Sluice after /unpair', async () => {
      await start();
      await pairPhone();
      h.fake.pushMessage(PHONE, { text: '/unpair' });
      await h.fake.until(
        () => textsTo(PHONE).some((x) => x.startsWith('Unpaired')),
        20_000,
        'the unpair reply',
      );
      h.fake.pushMessage(PHONE, { text: 'still there?' });
      await h.fake.until(
        () => textsTo(PHONE).some((x) => /pairing code/.test(x)),
        20_000,
        'the stranger line',
      );
      expect(await messageRows()).toHaveLength(0);
    });
  });

  describe('routing', () => {
    it('sends text to the DM with the current agent, and /to switches agents', async () => {
      await start();
      await pairPhone();
      h.fake.pushMessage(PHONE, { text: 'first, for helper' });
      const [first] = await untilMessages(1);
      h.fake.pushMessage(PHONE, { text: '/agents' });
      await h.fake.until(() => textsTo(PHONE).some((x) => x.includes('helper (current)')), 20_000, '/agents');
      expect(textsTo(PHONE).find((x) => x.includes('helper (current)'))).toBe('helper (current)\nreviewer');
      h.fake.pushMessage(PHONE, { text: '/to reviewer' });
      h.fake.pushMessage(PHONE, { text: 'second, for reviewer' });
      const rows = await untilMessages(2);
      const channels = await h.t.ctx.store.db.selectFrom('channels').select(['id', 'name']).execute();
      const name = (id: string) => channels.find((c) => c.id === id)?.name;
      expect(first?.body).toBe('first, for helper');
      expect(name(first?.channel_id ?? '')).toBe('dm:helper,owner');
      // Stored as relayed by the bridge, so the agent reads it as "via":"telegram" (provenance).
      expect(first?.origin).toBe('telegram');
      const delivery = await deliveryFor(h.t.ctx, await resolvePrincipal(h.t.ctx, 'helper'));
      expect(delivery.text).toContain('"from":"owner","sender":"owner","via":"telegram"');
      expect(rows[1]?.body).toBe('second, for reviewer');
      expect(name(rows[1]?.channel_id ?? '')).toBe('dm:owner,reviewer');
      h.fake.pushMessage(PHONE, { text: '/to nobody' });
      await h.fake.until(
        () => textsTo(PHONE).some((x) => x.includes('no agent named nobody')),
        20_000,
        '/to refusal',
      );
    });
  });

  describe('media in', () => {
    it('stores the largest photo size as an attachment with the caption as the body', async () => {
      await start();
      await pairPhone();
      const small = h.fake.addFile(Buffer.from('small thumbnail'));
      const large = h.fake.addFile(Buffer.from('the full-size photo bytes'));
      h.fake.pushMessage(PHONE, {
        photo: [
          { ...small, width: 90, height: 60 },
          { ...large, width: 1280, height: 853 },
        ],
        caption: "here's the new time, change the invitation",
      });
      const [row] = await untilMessages(1);
      expect(row?.body).toBe("here's the new time, change the invitation");
      const [ref] = JSON.parse(row?.attachments ?? '[]');
      const { bytes } = await readMediaBytes(h.t.ctx, h.t.owner, ref.attachment_id);
      expect(Buffer.from(bytes).toString()).toBe('the full-size photo bytes');
    });

    it('notes a document sent without a caption, and takes voice and audio as attachments', async () => {
      await start();
      await pairPhone();
      h.fake.pushMessage(PHONE, {
        document: { ...h.fake.addFile(Buffer.from('%PDF-1.4 tiny')), file_name: 'plan.pdf' },
      });
      h.fake.pushMessage(PHONE, { voice: { ...h.fake.addFile(Buffer.from('OggS voice')), duration: 2 } });
      h.fake.pushMessage(PHONE, {
        audio: { ...h.fake.addFile(Buffer.from('ID3 song')), duration: 3, file_name: 'song.mp3' },
      });
      const rows = await untilMessages(3);
      expect(rows.map((r) => r.body)).toEqual([
        '(sent a file: plan.pdf)',
        expect.stringMatching(/^\(sent a file: voice-\d+\.ogg\)$/),
        '(sent a file: song.mp3)',
      ]);
    });

    it('answers a file over 20 MB with one line and stores nothing', async () => {
      await start();
      await pairPhone();
      const big = h.fake.addFile(Buffer.from('not really big'), 21 * 1024 * 1024);
      h.fake.pushMessage(PHONE, { document: { ...big, file_name: 'huge.zip' }, caption: 'the archive' });
      await h.fake.until(
        () => textsTo(PHONE).some((x) => x.includes('at most 20 MB')),
        20_000,
        'the size line',
      );
      expect(await messageRows()).toHaveLength(0);
      expect(await h.t.ctx.store.db.selectFrom('media').selectAll().execute()).toHaveLength(0);
    });
  });

  describe('replies out', () => {
    it('sends an agent message to the paired chat, a long body as parts that join to the body', {
      timeout: 60_000,
    }, async () => {
      await start();
      await pairPhone();
      const helper = await resolvePrincipal(h.t.ctx, 'helper');
      // Counted before sending: the bridge may forward the first reply before the second is sent.
      const paired = textsTo(PHONE).length;
      const replies = () => textsTo(PHONE).slice(paired);
      await sendMessage(h.t.ctx, helper, { to: 'owner', body: 'short answer' });
      const long = Array.from({ length: 300 }, (_, i) => `line ${i} ${'x'.repeat(25)} 😀`).join('\n');
      await sendMessage(h.t.ctx, helper, { to: 'owner', body: long });
      await h.fake.until(() => replies().slice(1).join('') === long, 45_000, 'the replies');
      expect(replies()[0]).toBe('short answer');
      const parts = replies().slice(1);
      expect(parts.length).toBeGreaterThan(1);
      for (const part of parts) expect(part.length).toBeLessThanOrEqual(4096);
      expect(parts.join('')).toBe(long);
    });

    it('sends a body that would take many parts as one text document', async () => {
      await start();
      await pairPhone();
      const helper = await resolvePrincipal(h.t.ctx, 'helper');
      const huge = 'y'.repeat(4096 * 6);
      const { message_id } = await sendMessage(h.t.ctx, helper, { to: 'owner', body: huge });
      await h.fake.until(() => h.fake.sent.some((s) => s.method === 'sendDocument'), 20_000, 'the document');
      const doc = h.fake.sent.find((s) => s.method === 'sendDocument');
      expect(doc?.fileName).toBe(`message-${message_id}.txt`);
      expect(doc?.bytes?.toString('utf8')).toBe(huge);
    });

    it('labels a message from an agent the chat is not talking to, and retries after a 429', async () => {
      await start();
      await pairPhone();
      const reviewer = await resolvePrincipal(h.t.ctx, 'reviewer');
      h.fake.failNext('sendMessage', 1, 1);
      await sendMessage(h.t.ctx, reviewer, { to: 'owner', body: 'review done' });
      await h.fake.until(
        () => textsTo(PHONE).includes('from reviewer:\nreview done'),
        20_000,
        'the labelled reply',
      );
      expect(textsTo(PHONE).filter((x) => x.endsWith('review done'))).toHaveLength(1);
    });

    it("sends an agent's image as a photo", async () => {
      await start();
      await pairPhone();
      const helper = await resolvePrincipal(h.t.ctx, 'helper');
      const png = Buffer.from(
        'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
        'base64',
      );
      const stored = await putMedia(h.t.ctx, helper, png, 'chart.png');
      await sendMessage(h.t.ctx, helper, {
        to: 'owner',
        body: 'the chart',
        attachmentIds: [stored.attachment_id],
      });
      await h.fake.until(() => h.fake.sent.some((s) => s.method === 'sendPhoto'), 20_000, 'the photo');
      const photo = h.fake.sent.find((s) => s.method === 'sendPhoto');
      expect(photo?.bytes?.equals(png)).toBe(true);
      expect(textsTo(PHONE)).toContain('the chart');
    });
  });

  describe('exactly once', () => {
    it('stores an update handed out again after a restart only once', async () => {
      await start();
      await pairPhone();
      const id = h.fake.pushMessage(PHONE, { text: 'only once please' });
      await untilMessages(1);
      await h.stop();
      h.fake.redeliver(id);
      await start();
      await h.fake.until(() => h.fake.confirmedOffset() > id, 20_000, 'the confirmation');
      const rows = await messageRows();
      expect(rows.map((r) => r.body)).toEqual(['only once please']);
    });

    it('does not send again what a previous run already sent', async () => {
      await start();
      await pairPhone();
      const helper = await resolvePrincipal(h.t.ctx, 'helper');
      await sendMessage(h.t.ctx, helper, { to: 'owner', body: 'sent once' });
      await h.fake.until(() => textsTo(PHONE).includes('sent once'), 20_000, 'the reply');
      await h.stop();
      await start();
      await sendMessage(h.t.ctx, helper, { to: 'owner', body: 'after restart' });
      await h.fake.until(() => textsTo(PHONE).includes('after restart'), 20_000, 'the next reply');
      expect(textsTo(PHONE).filter((x) => x === 'sent once')).toHaveLength(1);
    });
  });
});
