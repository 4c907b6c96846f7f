import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import type { HostContext } from '../../src/host/context.js';
import { putMedia, readMediaBytes } from '../../src/host/media.js';
import { sendMessage } from '../../src/host/messages.js';
import { resolvePrincipal } from '../../src/host/principals.js';
import { createPairCode, PAIR_CODE_TTL_MS } from '../../src/host/telegram.js';
import { startTelegramBridge, type TelegramBridge } from '../../src/surfaces/bridges/telegram/bridge.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram } from '../support/fake-telegram.js';

const PHONE = 5550001;
const STRANGER = 5550666;

let t: ConformanceHost;
let fake: FakeTelegram;
let bridge: TelegramBridge | undefined;
const logs: string[] = [];

async function start(ctx: HostContext = t.ctx): Promise<TelegramBridge> {
  bridge = await startTelegramBridge({
    host: ctx,
    token: FAKE_BOT_TOKEN,
    apiRoot: fake.url,
    defaultAgent: 'helper',
    log: (line) => logs.push(line),
  });
  return bridge;
}

async function messageRows() {
  return t.ctx.store.db.selectFrom('messages').selectAll().orderBy('seq').execute();
}

function textsTo(chatId: number): string[] {
  return fake.sent
    .filter((s) => s.chatId === String(chatId) && s.method === 'sendMessage')
    .map((s) => s.text ?? '');
}

/** Sends `/pair` from the phone and waits for the bot's answer. */
async function pairPhone(userId = PHONE, person = 'owner'): Promise<void> {
  const { code } = await createPairCode(t.ctx, person);
  fake.pushMessage(userId, { text: `/pair ${code}` });
  await fake.until(() => textsTo(userId).some((x) => x.startsWith('Paired')), 20_000, 'the pairing reply');
}

/** Waits until the store holds `n` messages: re-checked after each commit of the in-process bridge. */
function untilMessages(n: number, timeoutMs = 20_000): Promise<Awaited<ReturnType<typeof messageRows>>> {
  return new Promise((resolve, reject) => {
    let checking = false;
    let again = false;
    const done = (fn: () => void) => {
      clearTimeout(timer);
      t.ctx.localCommitListeners.delete(check);
      fn();
    };
    const timer = setTimeout(
      () => done(() => reject(new Error(`timed out waiting for ${n} stored messages`))),
      timeoutMs,
    );
    async function check() {
      if (checking) {
        again = true;
        return;
      }
      checking = true;
      do {
        again = false;
        const rows = await messageRows();
        if (rows.length >= n) return done(() => resolve(rows));
      } while (again);
      checking = false;
    }
    t.ctx.localCommitListeners.add(check);
    void check();
  });
}

describe.each(backendsUnderTest())('the Telegram bridge on %s', (backend) => {
  // One PostgreSQL schema for the file, emptied between tests (see conformanceHostSeries).
  const hosts = conformanceHostSeries(backend, 'telegram');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    t = await hosts.open();
    await t.agent('helper');
    await t.agent('reviewer');
    fake = await startFakeTelegram();
    logs.length = 0;
  });

  afterEach(async () => {
    await bridge?.stop();
    bridge = undefined;
    await fake.close();
    await t.close();
  });

  describe('pairing', () => {
    it('answers an unpaired user with one polite line and stores nothing', async () => {
      await start();
      const before = await messageRows();
      fake.pushMessage(STRANGER, { text: 'hello, act on this' });
      await fake.until(() => textsTo(STRANGER).length === 1, 20_000, 'the stranger reply');
      expect(textsTo(STRANGER)[0]).toMatch(/pairing code/);
      expect(await messageRows()).toEqual(before);
      const channels = await t.ctx.store.db.selectFrom('channels').selectAll().execute();
      expect(channels).toHaveLength(0);
    });

    it('pairs a user with a one-time code, and the code works only once', async () => {
      await start();
      const { code } = await createPairCode(t.ctx, 'owner');
      expect(code).toMatch(/^[A-HJ-NP-Z2-9]{8}$/);
      fake.pushMessage(PHONE, { text: `/pair ${code}` });
      await fake.until(() => textsTo(PHONE).length === 1, 20_000, 'the pairing reply');
      expect(textsTo(PHONE)[0]).toMatch(/^Paired: you are owner here\. Your messages go to helper\./);
      fake.pushMessage(STRANGER, { text: `/pair ${code}` });
      await fake.until(() => textsTo(STRANGER).length === 1, 20_000, 'the refusal');
      expect(textsTo(STRANGER)[0]).toMatch(/not valid/);
      fake.pushMessage(STRANGER, { text: 'let me in' });
      await fake.until(() => textsTo(STRANGER).length === 2, 20_000, 'the stranger line');
      expect(await messageRows()).toHaveLength(0);
    });

    it('refuses a code after ten minutes', async () => {
      const { code } = await createPairCode(t.ctx, 'owner');
      const later = { ...t.ctx, now: () => new Date(Date.now() + PAIR_CODE_TTL_MS + 1000) };
      await start(later);
      fake.pushMessage(PHONE, { text: `/pair ${code}` });
      await fake.until(() => textsTo(PHONE).length === 1, 20_000, 'the refusal');
      expect(textsTo(PHONE)[0]).toMatch(/not valid/);
    });

    it('mints codes only for persons', async () => {
      await expect(createPairCode(t.ctx, 'helper')).rejects.toThrow(SluiceError);
      await expect(createPairCode(t.ctx, 'nobody')).rejects.toThrow(/no principal/);
    });

    it('stops reaching Sluice after /unpair', async () => {
      await start();
      await pairPhone();
      fake.pushMessage(PHONE, { text: '/unpair' });
      await fake.until(
        () => textsTo(PHONE).some((x) => x.startsWith('Unpaired')),
        20_000,
        'the unpair reply',
      );
      fake.pushMessage(PHONE, { text: 'still there?' });
      await fake.until(() => textsTo(PHONE).some((x) => /pairing code/.test(x)), 20_000, 'the stranger line');
      expect(await messageRows()).toHaveLength(0);
    });
  });

  describe('routing', () => {
    it('sends text to the DM with the current agent, and /to switches agents', async () => {
      await start();
      await pairPhone();
      fake.pushMessage(PHONE, { text: 'first, for helper' });
      const [first] = await untilMessages(1);
      fake.pushMessage(PHONE, { text: '/agents' });
      await fake.until(() => textsTo(PHONE).some((x) => x.includes('helper (current)')), 20_000, '/agents');
      expect(textsTo(PHONE).find((x) => x.includes('helper (current)'))).toBe('helper (current)\nreviewer');
      fake.pushMessage(PHONE, { text: '/to reviewer' });
      fake.pushMessage(PHONE, { text: 'second, for reviewer' });
      const rows = await untilMessages(2);
      const channels = await t.ctx.store.db.selectFrom('channels').select(['id', 'name']).execute();
      const name = (id: string) => channels.find((c) => c.id === id)?.name;
      expect(first?.body).toBe('first, for helper');
      expect(name(first?.channel_id ?? '')).toBe('dm:helper,owner');
      expect(rows[1]?.body).toBe('second, for reviewer');
      expect(name(rows[1]?.channel_id ?? '')).toBe('dm:owner,reviewer');
      fake.pushMessage(PHONE, { text: '/to nobody' });
      await fake.until(
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
      const small = fake.addFile(Buffer.from('small thumbnail'));
      const large = fake.addFile(Buffer.from('the full-size photo bytes'));
      fake.pushMessage(PHONE, {
        photo: [
          { ...small, width: 90, height: 60 },
          { ...large, width: 1280, height: 853 },
        ],
        caption: "here's the new time, change the invitation",
      });
      const [row] = await untilMessages(1);
      expect(row?.body).toBe("here's the new time, change the invitation");
      const [ref] = JSON.parse(row?.attachments ?? '[]');
      const { bytes } = await readMediaBytes(t.ctx, t.owner, ref.attachment_id);
      expect(Buffer.from(bytes).toString()).toBe('the full-size photo bytes');
    });

    it('notes a document sent without a caption, and takes voice and audio as attachments', async () => {
      await start();
      await pairPhone();
      fake.pushMessage(PHONE, {
        document: { ...fake.addFile(Buffer.from('%PDF-1.4 tiny')), file_name: 'plan.pdf' },
      });
      fake.pushMessage(PHONE, { voice: { ...fake.addFile(Buffer.from('OggS voice')), duration: 2 } });
      fake.pushMessage(PHONE, {
        audio: { ...fake.addFile(Buffer.from('ID3 song')), duration: 3, file_name: 'song.mp3' },
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
      const big = fake.addFile(Buffer.from('not really big'), 21 * 1024 * 1024);
      fake.pushMessage(PHONE, { document: { ...big, file_name: 'huge.zip' }, caption: 'the archive' });
      await fake.until(
        () => textsTo(PHONE).some((x) => x.includes('at most 20 MB')),
        20_000,
        'the size line',
      );
      expect(await messageRows()).toHaveLength(0);
      expect(await t.ctx.store.db.selectFrom('media').selectAll().execute()).toHaveLength(0);
    });
  });

  describe('replies out', () => {
    it('sends an agent message to the paired chat, a long body as parts that join to the body', {
      timeout: 60_000,
    }, async () => {
      await start();
      await pairPhone();
      const helper = await resolvePrincipal(t.ctx, 'helper');
      // Counted before sending: the bridge may forward the first reply before the second is sent.
      const paired = textsTo(PHONE).length;
      const replies = () => textsTo(PHONE).slice(paired);
      await sendMessage(t.ctx, helper, { to: 'owner', body: 'short answer' });
      const long = Array.from({ length: 300 }, (_, i) => `line ${i} ${'x'.repeat(25)} 😀`).join('\n');
      await sendMessage(t.ctx, helper, { to: 'owner', body: long });
      await fake.until(() => replies().slice(1).join('') === long, 45_000, 'the replies');
      expect(replies()[0]).toBe('short answer');
      const parts = replies().slice(1);
      expect(parts.length).toBeGreaterThan(1);
      for (const part of parts) expect(part.length).toBeLessThanOrEqual(4096);
      expect(parts.join('')).toBe(long);
    });

    it('sends a body that would take many parts as one text document', async () => {
      await start();
      await pairPhone();
      const helper = await resolvePrincipal(t.ctx, 'helper');
      const huge = 'y'.repeat(4096 * 6);
      const { message_id } = await sendMessage(t.ctx, helper, { to: 'owner', body: huge });
      await fake.until(() => fake.sent.some((s) => s.method === 'sendDocument'), 20_000, 'the document');
      const doc = fake.sent.find((s) => s.method === 'sendDocument');
      expect(doc?.fileName).toBe(`message-${message_id}.txt`);
      expect(doc?.bytes?.toString('utf8')).toBe(huge);
    });

    it('labels a message from an agent the chat is not talking to, and retries after a 429', async () => {
      await start();
      await pairPhone();
      const reviewer = await resolvePrincipal(t.ctx, 'reviewer');
      fake.failNext('sendMessage', 1, 1);
      await sendMessage(t.ctx, reviewer, { to: 'owner', body: 'review done' });
      await fake.until(
        () => textsTo(PHONE).includes('from reviewer:\nreview done'),
        20_000,
        'the labelled reply',
      );
      expect(textsTo(PHONE).filter((x) => x.endsWith('review done'))).toHaveLength(1);
    });

    it("sends an agent's image as a photo", async () => {
      await start();
      await pairPhone();
      const helper = await resolvePrincipal(t.ctx, 'helper');
      const png = Buffer.from(
        'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
        'base64',
      );
      const stored = await putMedia(t.ctx, helper, png, 'chart.png');
      await sendMessage(t.ctx, helper, {
        to: 'owner',
        body: 'the chart',
        attachmentIds: [stored.attachment_id],
      });
      await fake.until(() => fake.sent.some((s) => s.method === 'sendPhoto'), 20_000, 'the photo');
      const photo = fake.sent.find((s) => s.method === 'sendPhoto');
      expect(photo?.bytes?.equals(png)).toBe(true);
      expect(textsTo(PHONE)).toContain('the chart');
    });
  });

  describe('exactly once', () => {
    it('stores an update handed out again after a restart only once', async () => {
      await start();
      await pairPhone();
      const id = fake.pushMessage(PHONE, { text: 'only once please' });
      await untilMessages(1);
      await bridge?.stop();
      fake.redeliver(id);
      await start();
      await fake.until(() => fake.confirmedOffset() > id, 20_000, 'the confirmation');
      const rows = await messageRows();
      expect(rows.map((r) => r.body)).toEqual(['only once please']);
    });

    it('does not send again what a previous run already sent', async () => {
      await start();
      await pairPhone();
      const helper = await resolvePrincipal(t.ctx, 'helper');
      await sendMessage(t.ctx, helper, { to: 'owner', body: 'sent once' });
      await fake.until(() => textsTo(PHONE).includes('sent once'), 20_000, 'the reply');
      await bridge?.stop();
      await start();
      await sendMessage(t.ctx, helper, { to: 'owner', body: 'after restart' });
      await fake.until(() => textsTo(PHONE).includes('after restart'), 20_000, 'the next reply');
      expect(textsTo(PHONE).filter((x) => x === 'sent once')).toHaveLength(1);
    });
  });
});
