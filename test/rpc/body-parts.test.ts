import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderBodyPart } from '../../src/host/device/queue-pages.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { transitionEntry } from '../../src/host/queue/inbox.js';
import { findInboxEntry } from '../../src/store/ops/inbox.js';
import { findMessageById } from '../../src/store/ops/messages.js';
import { hostileString, splitsSurrogatePair } from '../core/arbitraries.js';
import { type Json, openServedHost, type RpcClient, type ServedHost } from './support.js';

const LONE_SURROGATES = '\ud800'.repeat(90_000);
/** Control characters: like lone surrogates, each is a 6-byte JSON escape, and they can be stored. */
const CONTROL_CHARACTERS = '\u0001'.repeat(90_000);

/** A multi-MB body of every awkward shape: emoji, CJK, quotes, backslashes, control characters. */
function multiMegabyteBody(): string {
  const pieces = ['😀', '中文', '"', '\\', '\u0000', '\n', 'plain text ', '\u2028', 'é', '\u001f'];
  let out = '';
  for (let i = 0; out.length < 1_500_000; i++) out += pieces[i % pieces.length];
  return out;
}

describe('body parts: exact stored bodies within the reply budget', () => {
  let h: ServedHost;
  let owner: RpcClient;

  beforeAll(async () => {
    h = await openServedHost();
    await h.agent('helper');
    owner = await h.client();
  });
  afterAll(async () => h.close());

  async function walk(method: 'queue.read' | 'message.read', messageId: string) {
    const parts: string[] = [];
    let cursor: string | undefined;
    let offset = 0;
    for (;;) {
      const params: Json = method === 'queue.read' ? { agent: 'helper', messageId } : { messageId };
      if (cursor !== undefined) params.cursor = cursor;
      const reply = await owner.call(method, params);
      expect(reply.error).toBeUndefined();
      expect(reply.bytes).toBeLessThanOrEqual(512 * 1024);
      expect(reply.result.status).toBe('body');
      expect(reply.result.part.offset).toBe(offset);
      parts.push(reply.result.part.text);
      offset += reply.result.part.text.length;
      if (reply.result.nextCursor === null) break;
      cursor = reply.result.nextCursor;
    }
    return parts;
  }

  async function stored(messageId: string): Promise<string> {
    return (await findMessageById(h.ctx.store.db, messageId))?.body as string;
  }

  it('rejoins 90,000 control characters (6-byte escapes) exactly as sent', async () => {
    const sent = await owner.ok('message.send', { to: 'helper', body: CONTROL_CHARACTERS });
    for (const method of ['queue.read', 'message.read'] as const) {
      const parts = await walk(method, sent.message_id);
      expect(parts.length).toBe(2);
      expect(parts.join('')).toBe(CONTROL_CHARACTERS);
      expect(parts.join('')).toBe(await stored(sent.message_id));
    }
  });

  it('refuses 90,000 lone surrogates as invalid_params naming the body (UTF-8 cannot store them)', async () => {
    const reply = await owner.call('message.send', { to: 'helper', body: LONE_SURROGATES });
    expect(reply.error?.data).toMatchObject({ code: 'invalid_params', field: 'body' });
  });

  it('rejoins a multi-MB body from several parts, each reply within 512 KiB', async () => {
    const body = multiMegabyteBody();
    const sent = await sendMessage(h.ctx, h.owner, { to: 'helper', body });
    const parts = await walk('queue.read', sent.message_id);
    expect(parts.length).toBeGreaterThan(3);
    expect(parts.join('')).toBe(body);
    expect(parts.join('')).toBe(await stored(sent.message_id));
    expect((await walk('message.read', sent.message_id)).join('')).toBe(body);
  });

  it('says state-changed when the body was edited mid-walk, handed-off and gone once the card settles', async () => {
    const body = multiMegabyteBody();
    const sent = await sendMessage(h.ctx, h.owner, { to: 'helper', body });
    const first = await owner.call('queue.read', { agent: 'helper', messageId: sent.message_id });
    await owner.ok('queue.edit', { agent: 'helper', messageId: sent.message_id, body: 'shorter now' });
    const next = await owner.call('queue.read', {
      agent: 'helper',
      messageId: sent.message_id,
      cursor: first.result.nextCursor,
    });
    expect(next.result).toMatchObject({ status: 'state-changed', messageId: sent.message_id });

    const helper = await h.ctx.store.db
      .selectFrom('principals')
      .selectAll()
      .where('name', '=', 'helper')
      .executeTakeFirstOrThrow();
    const message = await findMessageById(h.ctx.store.db, sent.message_id);
    await h.ctx.store.transaction(async (trx) => {
      const entry = await findInboxEntry(trx, helper.id, Number(message?.seq));
      if (entry) await transitionEntry(trx, entry, 'handled', new Date().toISOString());
    });
    expect(
      (await owner.call('queue.read', { agent: 'helper', messageId: sent.message_id })).result,
    ).toMatchObject({
      status: 'handed-off',
      state: 'handled',
    });

    const other = await sendMessage(h.ctx, h.owner, { to: 'helper', body: 'take it back' });
    await owner.ok('queue.withdraw', { agent: 'helper', messageId: other.message_id });
    expect(
      (await owner.call('queue.read', { agent: 'helper', messageId: other.message_id })).result,
    ).toMatchObject({
      status: 'gone',
      state: 'withdrawn',
    });
  });
});

describe('renderBodyPart', () => {
  function walkParts(body: string, budgetBytes: number): string[] {
    const parts: string[] = [];
    let offset = 0;
    for (;;) {
      const { text, value: result } = renderBodyPart({
        body,
        offset,
        budgetBytes,
        path: ['part', 'text'],
        result: (part, next) => ({ status: 'body', part: { text: part }, next }),
      });
      expect(Buffer.byteLength(text, 'utf8')).toBeLessThanOrEqual(budgetBytes);
      // The value is built from the result object, and it is what the text says.
      expect(result).toStrictEqual(JSON.parse(text));
      parts.push(result.part.text);
      if (result.next === null) return parts;
      expect(splitsSurrogatePair(body, result.next)).toBe(false);
      offset = result.next;
    }
  }

  it('counts a lone surrogate as its 6-byte JSON escape: 90,000 of them need two 512 KiB parts', () => {
    const parts = walkParts(LONE_SURROGATES, 512 * 1024);
    expect(parts.length).toBe(2);
    expect(parts.join('')).toBe(LONE_SURROGATES);
  });

  it('joins to the body and fits every budget for hostile text (property)', () => {
    fc.assert(
      fc.property(hostileString(400), fc.integer({ min: 80, max: 400 }), (body, budget) => {
        expect(walkParts(body, budget).join('')).toBe(body);
      }),
      { numRuns: 300 },
    );
  });
});
