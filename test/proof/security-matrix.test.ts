// The security matrix (I6): every read surface × every kind of caller who must be refused — a
// non-member, a removed member, a wrong token, another agent's (or caller's) cursor — plus the
// legitimate member, so a refusal is shown to be about the caller and not a blanket failure.
// Every refusal carries the documented code and none of the body text.
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createChannel, removeMember } from '../../src/host/channels/channels.js';
import { issueAccessToken, type Principal } from '../../src/host/identity/principals.js';
import { revokeCredential } from '../../src/host/identity/sessions.js';
import { putMedia } from '../../src/host/media/media.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { connectInMemory, type ToolCaller } from '../mcp/support.js';
import { openServedHost, type ServedHost } from '../rpc/support.js';

/** The marker every body carries: it must show up for the member and never in a refusal. */
const SECRET = 'SECRET-7f3a';

type Caller =
  | 'member'
  | 'member over /mcp'
  | 'non-member'
  | 'removed member'
  | 'wrong token'
  | "another caller's cursor"
  | BadBearer;

/**
 * Credentials that once were, or look like, the member's own: a browser session id sent as a bearer
 * token (sessions are cookies, not tokens), and the member's access token after it expired or was
 * revoked. Every surface reached over HTTP refuses each as `unauthenticated`.
 */
const BAD_BEARERS = ['session id as bearer', 'expired token', 'revoked token'] as const;
type BadBearer = (typeof BAD_BEARERS)[number];

/** What one attempt returned, reduced to what the matrix asserts. */
interface Outcome {
  ok: boolean;
  /** The error's string code (`data.code` for JSON-RPC, `error.code` for MCP and HTTP). */
  code?: string;
  /** Everything the caller received, to search for leaks. */
  text: string;
}

type Attempt = () => Promise<Outcome>;

/**
 * The table: surface, caller, expected answer ('ok' or the documented code), and whether a
 * successful answer carries message content (so it must contain the marker).
 */
const TABLE: [surface: string, caller: Caller, expected: string][] = [
  ['mcp channel_read page', 'member', 'ok'],
  ['mcp channel_read page', 'member over /mcp', 'ok'],
  ['mcp channel_read page', 'non-member', 'not_member'],
  ['mcp channel_read page', 'removed member', 'not_member'],
  ['mcp channel_read page', 'wrong token', 'unauthenticated'],
  ['mcp channel_read page', "another caller's cursor", 'invalid_cursor'],
  ['mcp channel_read fragments', 'member', 'ok'],
  ['mcp channel_read fragments', 'member over /mcp', 'ok'],
  ['mcp channel_read fragments', 'non-member', 'not_member'],
  ['mcp channel_read fragments', 'removed member', 'not_member'],
  ['mcp channel_read fragments', 'wrong token', 'unauthenticated'],
  ['mcp channel_read fragments', "another caller's cursor", 'invalid_cursor'],
  ['mcp channel_search', 'member', 'ok'],
  ['mcp channel_search', 'member over /mcp', 'ok'],
  ['mcp channel_search', 'non-member', 'not_member'],
  ['mcp channel_search', 'removed member', 'not_member'],
  ['mcp channel_search', 'wrong token', 'unauthenticated'],
  ['mcp channel_search', "another caller's cursor", 'invalid_cursor'],
  ['mcp channel_read_image', 'member', 'ok'],
  ['mcp channel_read_image', 'member over /mcp', 'ok'],
  ['mcp channel_read_image', 'non-member', 'not_found'],
  ['mcp channel_read_image', 'removed member', 'not_found'],
  ['mcp channel_read_image', 'wrong token', 'unauthenticated'],
  ['rpc queue.page', 'member', 'ok'],
  ['rpc queue.page', 'non-member', 'denied'],
  ['rpc queue.page', 'removed member', 'denied'],
  ['rpc queue.page', 'wrong token', 'unauthenticated'],
  ['rpc queue.page', "another caller's cursor", 'invalid_cursor'],
  ['rpc queue.read', 'member', 'ok'],
  ['rpc queue.read', 'non-member', 'denied'],
  ['rpc queue.read', 'removed member', 'denied'],
  ['rpc queue.read', 'wrong token', 'unauthenticated'],
  ['rpc queue.read', "another caller's cursor", 'invalid_cursor'],
  ['rpc channel.history', 'member', 'ok'],
  ['rpc channel.history', 'non-member', 'not_member'],
  ['rpc channel.history', 'removed member', 'not_member'],
  ['rpc channel.history', 'wrong token', 'unauthenticated'],
  ['rpc channel.history', "another caller's cursor", 'invalid_cursor'],
  ['rpc message.read', 'member', 'ok'],
  ['rpc message.read', 'non-member', 'not_member'],
  ['rpc message.read', 'removed member', 'not_member'],
  ['rpc message.read', 'wrong token', 'unauthenticated'],
  ['rpc message.read', "another caller's cursor", 'invalid_cursor'],
  ['http GET /media/<id>', 'member', 'ok'],
  ['http GET /media/<id>', 'non-member', 'not_found'],
  ['http GET /media/<id>', 'removed member', 'not_found'],
  ['http GET /media/<id>', 'wrong token', 'unauthenticated'],
  ['ws subscribe channels', 'member', 'ok'],
  ['ws subscribe channels', 'non-member', 'not_member'],
  ['ws subscribe channels', 'removed member', 'not_member'],
  ['ws subscribe channels', 'wrong token', 'unauthenticated'],
  ['ws subscribe queues', 'member', 'ok'],
  ['ws subscribe queues', 'non-member', 'denied'],
  ['ws subscribe queues', 'removed member', 'denied'],
  ['ws subscribe queues', 'wrong token', 'unauthenticated'],
];
for (const surface of new Set(TABLE.map(([s]) => s))) {
  for (const caller of BAD_BEARERS) TABLE.push([surface, caller, 'unauthenticated']);
}

/** Surfaces whose successful answer carries message content. */
const CARRIES_CONTENT = new Set([
  'mcp channel_read page',
  'mcp channel_read fragments',
  'mcp channel_search',
  'rpc queue.page',
  'rpc queue.read',
  'rpc channel.history',
  'rpc message.read',
]);

const WRONG_TOKEN = 'not-a-real-token-0123456789';

describe('security matrix: every read surface refuses every caller who may not read', () => {
  let h: ServedHost;
  const attempts = new Map<string, Partial<Record<Caller, Attempt>>>();

  beforeAll(async () => {
    // Small replies so a modest body comes in several parts and cursors exist everywhere.
    h = await openServedHost({ limits: { replyBytes: 16 * 1024 } });
    const alice = await h.person('alice');
    await h.person('mallory');
    await h.person('ron');
    const bot = await h.agent('bot');
    const bot2 = await h.agent('bot2');
    const eve = await h.agent('eve');
    const rem = await h.agent('rem');
    for (const agent of ['bot', 'bot2', 'eve', 'rem']) await h.manage(agent, 'alice'); // managers add agents
    const room = (await createChannel(h.ctx, alice, { name: 'room', members: ['bot', 'bot2', 'rem', 'ron'] }))
      .id;
    // A channel eve and mallory do belong to, so they are principals with reads of their own.
    await createChannel(h.ctx, alice, { name: 'elsewhere', members: ['eve', 'mallory'] });
    for (let i = 0; i < 3; i++) {
      await sendMessage(h.ctx, alice, { to: room, body: `${SECRET} small ${i} word` });
    }
    const big = (await sendMessage(h.ctx, alice, { to: room, body: `${SECRET} ${'word '.repeat(8_000)}` }))
      .message_id;
    const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#c00' } })
      .png()
      .toBuffer();
    const image = await putMedia(h.ctx, alice, png, 'picture.png');
    await sendMessage(h.ctx, alice, {
      to: room,
      body: `${SECRET} picture`,
      attachmentIds: [image.attachment_id],
    });
    await removeMember(h.ctx, alice, room, 'rem');
    await removeMember(h.ctx, alice, room, 'ron');

    // MCP: bot is the member, eve never was, rem was removed; bot2's cursors are "another's".
    const mcp = async (agent: Principal) => connectInMemory(h.ctx, agent);
    const [botMcp, bot2Mcp, eveMcp, remMcp] = await Promise.all([mcp(bot), mcp(bot2), mcp(eve), mcp(rem)]);
    closers.push(...[botMcp, bot2Mcp, eveMcp, remMcp].map((c) => () => c.close()));
    const tool =
      (caller: ToolCaller, name: string, args: Record<string, unknown>): Attempt =>
      async () => {
        const r = await caller.call(name, args);
        return { ok: !r.isError, code: r.json.error?.code, text: r.text };
      };
    const botToken = await h.token('bot');
    // The member's credentials gone bad (see BAD_BEARERS), for every surface reached over HTTP.
    const gone = await issueAccessToken(h.ctx, 'alice');
    await revokeCredential(h.ctx, gone.id);
    const past = { ...h.ctx, now: () => new Date(Date.now() - 2 * 3_600_000) };
    const badTokens: Record<BadBearer, string> = {
      'session id as bearer': (await h.sessionCookie('alice')).split('=')[1] as string,
      'expired token': (await issueAccessToken(past, 'alice', { expiresInMs: 3_600_000 })).token,
      'revoked token': gone.token,
    };
    const bad = (attempt: (token: string) => Attempt) =>
      Object.fromEntries(BAD_BEARERS.map((c) => [c, attempt(badTokens[c])])) as Record<BadBearer, Attempt>;
    const overHttp =
      (name: string, args: Record<string, unknown>, token = WRONG_TOKEN): Attempt =>
      () =>
        mcpOverHttp(h.server.url, token, name, args);
    const bot2History = (await bot2Mcp.call('channel_read', { channel_id: room, limit: 1 })).json.nextCursor;
    const bot2Content = (await bot2Mcp.call('channel_read', { message_id: big })).json.contentCursor;
    const bot2Search = (await bot2Mcp.call('channel_search', { query: 'small', channel_id: room, limit: 1 }))
      .json.nextCursor;
    expect([bot2History, bot2Content, bot2Search]).toEqual([
      expect.any(String),
      expect.any(String),
      expect.any(String),
    ]);

    const page = { channel_id: room, limit: 1 };
    attempts.set('mcp channel_read page', {
      member: tool(botMcp, 'channel_read', page),
      'member over /mcp': overHttp('channel_read', page, botToken),
      'non-member': tool(eveMcp, 'channel_read', page),
      'removed member': tool(remMcp, 'channel_read', page),
      'wrong token': overHttp('channel_read', page),
      ...bad((t) => overHttp('channel_read', page, t)),
      "another caller's cursor": tool(botMcp, 'channel_read', { ...page, cursor: bot2History }),
    });
    attempts.set('mcp channel_read fragments', {
      member: tool(botMcp, 'channel_read', { message_id: big }),
      'member over /mcp': overHttp('channel_read', { message_id: big }, botToken),
      'non-member': tool(eveMcp, 'channel_read', { message_id: big }),
      'removed member': tool(remMcp, 'channel_read', { message_id: big }),
      'wrong token': overHttp('channel_read', { message_id: big, content_cursor: bot2Content }),
      ...bad((t) => overHttp('channel_read', { message_id: big, content_cursor: bot2Content }, t)),
      "another caller's cursor": tool(botMcp, 'channel_read', {
        message_id: big,
        content_cursor: bot2Content,
      }),
    });
    const search = { query: 'small', channel_id: room, limit: 1 };
    attempts.set('mcp channel_search', {
      member: tool(botMcp, 'channel_search', search),
      'member over /mcp': overHttp('channel_search', search, botToken),
      'non-member': tool(eveMcp, 'channel_search', search),
      'removed member': tool(remMcp, 'channel_search', search),
      'wrong token': overHttp('channel_search', search),
      ...bad((t) => overHttp('channel_search', search, t)),
      "another caller's cursor": tool(botMcp, 'channel_search', { ...search, cursor: bot2Search }),
    });
    const img = { attachment_id: image.attachment_id };
    attempts.set('mcp channel_read_image', {
      member: tool(botMcp, 'channel_read_image', img),
      'member over /mcp': overHttp('channel_read_image', img, botToken),
      'non-member': tool(eveMcp, 'channel_read_image', img),
      'removed member': tool(remMcp, 'channel_read_image', img),
      'wrong token': overHttp('channel_read_image', img),
      ...bad((t) => overHttp('channel_read_image', img, t)),
    });

    // JSON-RPC over POST: alice (a person in #room with bot) is the member, mallory never was,
    // ron was removed; bot's own cursors are "another caller's" for alice.
    const tokens = {
      alice: await h.token('alice'),
      mallory: await h.token('mallory'),
      ron: await h.token('ron'),
      bot: await h.token('bot'),
    };
    const rpc =
      (token: string, method: string, params: Record<string, unknown>): Attempt =>
      () =>
        rpcPost(h.server.url, token, method, params);
    const cursorOf = async (method: string, params: Record<string, unknown>) => {
      const r = await rpcPost(h.server.url, tokens.bot, method, params);
      const cursor = (JSON.parse(r.text) as { result?: { nextCursor?: unknown } }).result?.nextCursor;
      expect(cursor, `${method} gives bot a cursor`).toEqual(expect.any(String));
      return cursor as string;
    };
    const rpcRows = (method: string, params: Record<string, unknown>, cursor: string) => ({
      member: rpc(tokens.alice, method, params),
      'non-member': rpc(tokens.mallory, method, params),
      'removed member': rpc(tokens.ron, method, params),
      'wrong token': rpc(WRONG_TOKEN, method, params),
      ...bad((t) => rpc(t, method, params)),
      "another caller's cursor": rpc(tokens.alice, method, { ...params, cursor }),
    });
    const queuePage = { agent: 'bot', size: 1 };
    attempts.set('rpc queue.page', rpcRows('queue.page', queuePage, await cursorOf('queue.page', queuePage)));
    const queueRead = { agent: 'bot', messageId: big };
    attempts.set('rpc queue.read', rpcRows('queue.read', queueRead, await cursorOf('queue.read', queueRead)));
    const history = { channelId: room, size: 1 };
    attempts.set(
      'rpc channel.history',
      rpcRows('channel.history', history, await cursorOf('channel.history', history)),
    );
    const messageRead = { messageId: big };
    attempts.set(
      'rpc message.read',
      rpcRows('message.read', messageRead, await cursorOf('message.read', messageRead)),
    );

    const media =
      (token: string): Attempt =>
      () =>
        mediaGet(h.server.url, token, image.attachment_id);
    attempts.set('http GET /media/<id>', {
      member: media(tokens.alice),
      'non-member': media(tokens.mallory),
      'removed member': media(tokens.ron),
      'wrong token': media(WRONG_TOKEN),
      ...bad((t) => media(t)),
    });

    const subscribe =
      (token: string, params: Record<string, unknown>): Attempt =>
      () =>
        wsSubscribe(h.server.url, token, params);
    for (const [surface, params] of [
      ['ws subscribe channels', { channels: [room] }],
      ['ws subscribe queues', { queues: ['bot'] }],
    ] as const) {
      attempts.set(surface, {
        member: subscribe(tokens.alice, params),
        'non-member': subscribe(tokens.mallory, params),
        'removed member': subscribe(tokens.ron, params),
        'wrong token': subscribe(WRONG_TOKEN, params),
        ...bad((t) => subscribe(t, params)),
      });
    }
  });

  const closers: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of closers) await close();
    await h?.close();
  });

  it('covers every surface with a member row and every refusal that applies to it', () => {
    const surfaces = new Set(TABLE.map(([s]) => s));
    expect(surfaces.size).toBe(11);
    for (const surface of surfaces) {
      const callers = TABLE.filter(([s]) => s === surface).map(([, c]) => c);
      expect(callers).toEqual(
        expect.arrayContaining(['member', 'non-member', 'removed member', 'wrong token']),
      );
      expect(Object.keys(attempts.get(surface) ?? {}).sort()).toEqual([...callers].sort());
    }
  });

  it.each(TABLE)('%s, called by: %s → %s', async (surface, caller, expected) => {
    const attempt = attempts.get(surface)?.[caller];
    if (!attempt) throw new Error(`no attempt for ${surface} × ${caller}`);
    const outcome = await attempt();
    if (expected === 'ok') {
      // The member's answer proves the refusals below are about the caller, not a broken surface.
      expect(outcome.code, outcome.text.slice(0, 300)).toBeUndefined();
      expect(outcome.ok).toBe(true);
      if (CARRIES_CONTENT.has(surface)) expect(outcome.text).toContain(SECRET);
    } else {
      expect(outcome.ok).toBe(false);
      expect(outcome.code, outcome.text.slice(0, 300)).toBe(expected);
      expect(outcome.text).not.toContain(SECRET);
      expect(outcome.text).not.toContain('word word');
      expect(outcome.text.length).toBeLessThan(2_000);
    }
  });
});

/** One JSON-RPC request as an HTTP POST; 401 and JSON-RPC errors both become a code. */
async function rpcPost(
  url: string,
  token: string,
  method: string,
  params: Record<string, unknown>,
): Promise<Outcome> {
  const res = await fetch(`${url}/rpc`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const text = await res.text();
  const body = JSON.parse(text);
  if (res.status !== 200) return { ok: false, code: body.error?.code, text };
  if (body.error) return { ok: false, code: body.error.data?.code, text };
  return { ok: true, text };
}

async function mediaGet(url: string, token: string, id: string): Promise<Outcome> {
  const res = await fetch(`${url}/media/${encodeURIComponent(id)}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  if (res.status === 200) return { ok: bytes.length > 0, text: bytes.toString('latin1') };
  const text = bytes.toString('utf8');
  return { ok: false, code: JSON.parse(text).error?.code, text };
}

/** A tool call over MCP Streamable HTTP (`POST /mcp`), reduced to its error code. */
async function mcpOverHttp(
  url: string,
  token: string,
  name: string,
  args: Record<string, unknown>,
): Promise<Outcome> {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  const text = await res.text();
  if (res.status !== 200) return { ok: false, code: JSON.parse(text).error?.code, text };
  const data = text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)));
  const result = data.find((d) => d.id === 1)?.result;
  const inner = result?.content?.[0]?.text ?? '';
  return result?.isError
    ? { ok: false, code: JSON.parse(inner).error?.code, text }
    : { ok: result !== undefined, text };
}

/** Opens a WebSocket and subscribes; a refused upgrade (401) is a refusal with its JSON body. */
function wsSubscribe(url: string, token: string, params: Record<string, unknown>): Promise<Outcome> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/rpc`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return new Promise((resolve, reject) => {
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () => {
        ws.terminate();
        resolve({ ok: false, code: JSON.parse(text).error?.code, text });
      });
    });
    ws.once('error', (err) => {
      if (!/Unexpected server response/.test(err.message)) reject(err);
    });
    ws.once('open', () => {
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe', params }));
    });
    let text = '';
    ws.on('message', (data) => {
      const raw = data.toString();
      text += raw;
      const msg = JSON.parse(raw);
      if (msg.id !== 1) return;
      ws.close();
      resolve(msg.error ? { ok: false, code: msg.error.data?.code, text } : { ok: true, text });
    });
  });
}
