import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { isWellFormed, sliceWhole } from '../../src/core/text.js';
import type { HostContext } from '../../src/host/identity/context.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { putMedia, sanitizeFileName } from '../../src/host/media/media.js';
import { editMessage } from '../../src/host/messages/edit-message.js';
import { readProjection, replyToMessage, sendMessage } from '../../src/host/messages/messages.js';
import { editQueuedMessage, pauseQueue } from '../../src/host/queue/queue.js';
import { buildMcpServer } from '../../src/surfaces/mcp/tools.js';
import { handleRpcBytes, handleRpcText } from '../../src/surfaces/rpc/dispatch.js';
import { DEFAULT_RPC_LIMITS } from '../../src/surfaces/rpc/methods.js';
import { hostileString } from '../core/arbitraries.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from './backend.js';

/** Everything a write could change: a refused write must leave all of it as it was. */
async function snapshot(ctx: HostContext) {
  const db = ctx.store.db;
  return {
    messages: await db
      .selectFrom('messages')
      .select(['id', 'body', 'subject', 'revision'])
      .orderBy('seq')
      .execute(),
    revisions: (await db.selectFrom('message_revisions').select('message_seq').execute()).length,
    events: (await db.selectFrom('events').select('seq').execute()).length,
    media: await db.selectFrom('media').select(['id', 'name']).orderBy('id').execute(),
    queues: await db
      .selectFrom('queues')
      .select(['agent_id', 'paused', 'paused_reason'])
      .orderBy('agent_id')
      .execute(),
  };
}

/** Text that is sometimes ill-formed: hostile pieces (lone surrogates among them) and raw UTF-16. */
const text = fc.oneof(
  hostileString(40),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).map((s) => `x${s}\ud800`),
  fc.constantFrom('\udfff', 'a\udc00b', '😀'.slice(0, 1), '😀'.slice(1), `${'😀'.repeat(3)}\ud83d`),
);

async function refusalOf(write: () => Promise<unknown>): Promise<SluiceError | undefined> {
  try {
    await write();
    return undefined;
  } catch (err) {
    if (err instanceof SluiceError) return err;
    throw err;
  }
}

describe.each(backendsUnderTest())('text stored exactly or refused, on %s', (backend) => {
  let h: ConformanceHost;
  let bot: Principal;
  let parentId: string;
  beforeAll(async () => {
    h = await openConformanceHost(backend, 'text');
    bot = await h.agent('bot');
    parentId = (await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'parent' })).message_id;
  });
  afterAll(async () => {
    await h?.close();
  });

  /** One write path: the field it names, the write, and what reading it back gives. */
  interface WritePath {
    field: string;
    write(value: string): Promise<() => Promise<string | null | undefined>>;
  }
  const paths: Record<string, WritePath> = {
    'send body': {
      field: 'body',
      async write(value) {
        const sent = await sendMessage(h.ctx, h.owner, { to: 'bot', body: `b${value}` });
        return async () => (await readProjection(h.ctx, h.owner, sent.message_id)).body.slice(1);
      },
    },
    'send subject': {
      field: 'subject',
      async write(value) {
        const sent = await sendMessage(h.ctx, h.owner, { to: 'bot', body: 'b', subject: value });
        return async () => (await readProjection(h.ctx, h.owner, sent.message_id)).subject;
      },
    },
    'reply body': {
      field: 'body',
      async write(value) {
        const sent = await replyToMessage(h.ctx, h.owner, parentId, { body: `b${value}` });
        return async () => (await readProjection(h.ctx, h.owner, sent.message_id)).body.slice(1);
      },
    },
    'edit body': {
      field: 'body',
      async write(value) {
        const edited = await editMessage(h.ctx, h.owner, parentId, { body: `b${value}` });
        return async () => (await readProjection(h.ctx, h.owner, edited.message_id)).body.slice(1);
      },
    },
    'edit subject': {
      field: 'subject',
      async write(value) {
        const edited = await editMessage(h.ctx, h.owner, parentId, { body: 'b', subject: value });
        return async () => (await readProjection(h.ctx, h.owner, edited.message_id)).subject;
      },
    },
    'queue.edit body': {
      field: 'body',
      async write(value) {
        const edited = await editQueuedMessage(h.ctx, h.owner, 'bot', parentId, `b${value}`);
        return async () => (await readProjection(h.ctx, h.owner, edited.message_id)).body.slice(1);
      },
    },
    'pause reason': {
      field: 'reason',
      async write(value) {
        await pauseQueue(h.ctx, h.owner, 'bot', value);
        return async () => {
          const row = await h.ctx.store.db
            .selectFrom('queues')
            .select('paused_reason')
            .where('agent_id', '=', bot.id)
            .executeTakeFirstOrThrow();
          // Reasons are cut at 500 UTF-16 units (documented), never inside a surrogate pair.
          return row.paused_reason === sliceWhole(value, 500) ? value : `changed: ${row.paused_reason}`;
        };
      },
    },
    'upload name': {
      field: 'name',
      async write(value) {
        const ref = await putMedia(h.ctx, h.owner, new TextEncoder().encode('bytes'), value);
        // Names are sanitised for paths (documented); beyond that they are kept exactly.
        return async () => (ref.name === sanitizeFileName(value) ? value : `changed: ${ref.name}`);
      },
    },
  };

  for (const [name, path] of Object.entries(paths)) {
    it(`${name}: every accepted text reads back identical, every ill-formed one is refused and changes nothing`, async () => {
      await fc.assert(
        fc.asyncProperty(text, async (value) => {
          const before = await snapshot(h.ctx);
          let readBack: (() => Promise<string | null | undefined>) | undefined;
          const refused = await refusalOf(async () => {
            readBack = await path.write(value);
          });
          if (isWellFormed(value)) {
            expect(refused?.message).toBeUndefined();
            expect(await readBack?.()).toBe(value);
          } else {
            expect(refused?.code).toBe('invalid_params');
            expect(refused?.data).toMatchObject({ field: path.field });
            expect(refused?.message).toContain(path.field);
            expect(await snapshot(h.ctx)).toEqual(before);
          }
        }),
        { numRuns: backend === 'postgres' ? 40 : 80 },
      );
    });
  }

  it('refuses a lone surrogate sent as a JSON escape over JSON-RPC, naming the field', async () => {
    const session = { ctx: h.ctx, principal: h.owner, limits: DEFAULT_RPC_LIMITS };
    for (const [params, field] of [
      [{ to: 'bot', body: 'ok\ud800' }, 'body'],
      [{ to: 'bot', body: 'ok', subject: '\udfff' }, 'subject'],
      [{ to: 'bot', body: 'ok', idempotency_key: 'k\ud800' }, 'idempotency_key'],
    ] as const) {
      const before = await snapshot(h.ctx);
      const frame = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message.send', params });
      expect(frame).toContain('\\ud'); // the lone surrogate travels as an escape, as real clients send it
      const reply = JSON.parse((await handleRpcText(session, frame)) as string);
      expect(reply.error).toMatchObject({ code: -32602, data: { code: 'invalid_params', field } });
      expect(await snapshot(h.ctx)).toEqual(before);
    }
  });

  it('refuses a POSTed request whose bytes are not UTF-8 instead of decoding it with U+FFFD', async () => {
    const session = { ctx: h.ctx, principal: h.owner, limits: DEFAULT_RPC_LIMITS };
    const frame = Buffer.from(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message.send', params: { to: 'bot', body: 'ok-X' } }),
    );
    frame[frame.indexOf('X')] = 0xff;
    const before = await snapshot(h.ctx);
    const reply = JSON.parse((await handleRpcBytes(session, frame)) as string);
    expect(reply.error).toMatchObject({ code: -32700, data: { code: 'parse_error' } });
    expect(reply.error.message).toContain('UTF-8');
    expect(await snapshot(h.ctx)).toEqual(before);
  });

  it('refuses a lone surrogate in message_send and message_reply over MCP, naming the field', async () => {
    const server = buildMcpServer(h.ctx, bot);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'exact-text', version: '0.0.0' });
    await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
    try {
      for (const [tool, args, field] of [
        ['message_send', { to: 'owner', body: 'hi\ud83d' }, 'body'],
        ['message_send', { to: 'owner', body: 'hi', subject: '\udc00' }, 'subject'],
        ['message_reply', { message_id: parentId, body: '\udfffhi' }, 'body'],
      ] as const) {
        const before = await snapshot(h.ctx);
        const result = (await client.callTool({ name: tool, arguments: args })) as {
          isError?: boolean;
          content: { type: string; text: string }[];
        };
        expect(result.isError).toBe(true);
        const error = JSON.parse(result.content[0]?.text ?? '{}').error;
        expect(error.code).toBe('invalid_params');
        expect(error.message).toContain(field);
        expect(await snapshot(h.ctx)).toEqual(before);
      }
      const ok = (await client.callTool({
        name: 'message_send',
        arguments: { to: 'owner', body: '😀\u0000é' },
      })) as {
        content: { text: string }[];
      };
      const sent = JSON.parse(ok.content[0]?.text ?? '{}');
      expect((await readProjection(h.ctx, h.owner, sent.message_id)).body).toBe('😀\u0000é');
    } finally {
      await client.close();
      await server.close();
    }
  });
});
