import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import WebSocket from 'ws';
import { createChannel } from '../src/host/channels/channels.js';
import type { HostContext, HostLimits } from '../src/host/identity/context.js';
import { initHome, openHost } from '../src/host/identity/home.js';
import {
  addPrincipal,
  issueToken,
  type Principal,
  resolvePrincipal,
} from '../src/host/identity/principals.js';
import { sendMessage } from '../src/host/messages/messages.js';
import { findMessageById } from '../src/store/ops/messages.js';
import { type HostServer, startHostServer } from '../src/surfaces/http/server.js';
import type { FuzzFailure, FuzzReport } from './fuzz-cli.js';
import { stateSnapshot } from './state-snapshot.js';

/** A seeded host behind a real server on 127.0.0.1, for the network fuzzers. */
export interface FuzzHost {
  ctx: HostContext;
  /** A folder of its own holding only `home`, so a fuzzer can prove nothing is written beside it. */
  sandbox: string;
  home: string;
  server: HostServer;
  owner: Principal;
  bot: Principal;
  alice: Principal;
  /** `#room`: alice, bot. */
  roomId: string;
  messageIds: string[];
  token(name: string): Promise<string>;
  close(): Promise<void>;
}

/** Opens a fresh home with an owner, an agent `bot`, a person `alice` and a few messages. */
export async function openFuzzHost(options: { limits?: Partial<HostLimits> } = {}): Promise<FuzzHost> {
  const sandbox = mkdtempSync(join(tmpdir(), 'sluice-fuzz-'));
  const home = join(sandbox, 'home');
  const ctx = await openHost({ home, durability: 'normal', pollMs: 10, limits: options.limits });
  await initHome(ctx);
  const owner = await resolvePrincipal(ctx, 'owner');
  const alice = await addPrincipal(ctx, { name: 'alice', kind: 'person' });
  // alice manages bot: only an agent's managers add it to a group.
  const bot = await addPrincipal(ctx, { name: 'bot', kind: 'agent', managerId: alice.id });
  const roomId = (await createChannel(ctx, alice, { name: 'room', members: ['bot', 'owner'] })).id;
  const messageIds: string[] = [];
  for (const body of ['hello', '😀 ünïcødé 漢字', 'x'.repeat(20_000)]) {
    messageIds.push((await sendMessage(ctx, alice, { to: roomId, body })).message_id);
  }
  const server = await startHostServer({ ctx, port: 0, webRoot: '/nonexistent-web-root' });
  return {
    ctx,
    sandbox,
    home,
    server,
    owner,
    bot,
    alice,
    roomId,
    messageIds,
    token: (name) => issueToken(ctx, name),
    async close() {
      await server.close();
      await ctx.store.close();
      rmSync(sandbox, { recursive: true, force: true });
    },
  };
}

const METHODS = [
  'host.hello',
  'queue.summary',
  'queue.page',
  'queue.read',
  'queue.pause',
  'queue.resume',
  'queue.withdraw',
  'queue.edit',
  'channel.list',
  'channel.create',
  'channel.addMember',
  'channel.removeMember',
  'channel.leave',
  'channel.invitations',
  'channel.accept',
  'channel.decline',
  'channel.history',
  'message.send',
  'message.edit',
  'message.read',
  'message.markRead',
  'subscribe',
  'unsubscribe',
];

const FIELDS = [
  'agent',
  'source',
  'cursor',
  'around',
  'size',
  'messageId',
  'channelId',
  'channel_id',
  'limit',
  'to',
  'body',
  'subject',
  'reply_to',
  'attachments',
  'queues',
  'channels',
  'name',
  'members',
  'member',
  'reason',
  'client',
  'protocol',
  '__proto__',
  'constructor',
  'toString',
  'unknown_field',
  '',
];

/** Strings an attacker or a broken client would send: control chars, lone surrogates, 4 KiB+. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    'bot',
    'alice',
    'owner',
    '#room',
    '😀',
    '漢字',
    '\u0000',
    '\ud800',
    '\udfff',
    '"\\',
    '../../etc/passwd',
    '%00',
    '%s%n',
    '<script>alert(1)</script>',
    "'; drop table messages; --",
    '__proto__',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.nat({ max: 3 }).map((n) => 'é'.repeat(4_096 + n)),
);

/** Any JSON value of a wrong or hostile kind: huge/odd numbers, hostile strings, small nestings. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, -0, 1.5, 2 ** 53 + 1, 1e308, -1e308, Number.MAX_SAFE_INTEGER),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  hostileString,
  fc.array(hostileString, { maxLength: 4 }),
  fc.jsonValue({ maxDepth: 3 }),
);

const params: fc.Arbitrary<unknown> = fc.oneof(
  fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS), fc.string({ maxLength: 12 })), hostileValue, {
    maxKeys: 4,
  }),
  hostileValue,
);

const requestId: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  hostileString,
  fc.constantFrom(null, true, false, [], {}, [1], { a: 1 }, 'x'.repeat(5_000)),
);

/** One request object with every member optional or of the wrong kind. */
const requestObject = fc.record(
  {
    jsonrpc: fc.oneof(fc.constant('2.0'), fc.constantFrom('1.0', 2, null)),
    id: requestId,
    method: fc.oneof(fc.constantFrom(...METHODS), hostileString),
    params,
  },
  { requiredKeys: ['jsonrpc', 'method'] },
);

/** The real fields of each method (docs/rpc.md), so targeted requests get past the field check. */
const METHOD_FIELDS: Record<string, string[]> = {
  'host.hello': ['client', 'protocol'],
  'queue.summary': ['agent'],
  'queue.page': ['agent', 'source', 'cursor', 'around', 'size'],
  'queue.read': ['agent', 'messageId', 'cursor'],
  'queue.pause': ['agent', 'reason'],
  'queue.resume': ['agent', 'messageId'],
  'queue.withdraw': ['agent', 'messageId'],
  'queue.edit': ['agent', 'messageId', 'body'],
  'channel.list': ['cursor', 'limit'],
  'channel.create': ['name', 'members'],
  'channel.addMember': ['channelId', 'member'],
  'channel.removeMember': ['channelId', 'member'],
  'channel.leave': ['channel_id'],
  'channel.invitations': ['cursor', 'limit'],
  'channel.accept': ['channel_id'],
  'channel.decline': ['channel_id'],
  'channel.history': ['channelId', 'cursor', 'size'],
  'message.send': ['to', 'body', 'subject', 'reply_to', 'attachments', 'idempotency_key'],
  'message.edit': ['messageId', 'body', 'subject'],
  'message.read': ['messageId', 'cursor'],
  'message.markRead': ['messageId'],
  subscribe: ['queues', 'channels'],
  unsubscribe: ['queues', 'channels'],
};

/** Ids of the seeded host that targeted requests use as plausible values. */
export interface KnownIds {
  channels: string[];
  messages: string[];
}

/** A plausible value for each field: real names and ids, so a request passes the schema. */
function plausibleFor(field: string, known: KnownIds): fc.Arbitrary<unknown> {
  const channel = fc.constantFrom('c_nope', ...known.channels);
  const message = fc.constantFrom('m_nope', ...known.messages);
  const principal = fc.constantFrom('bot', 'bot', 'bot', 'alice', 'owner', 'nobody');
  switch (field) {
    case 'agent':
    case 'member':
      return principal;
    case 'source':
      return fc.constantFrom('person', 'agent', 'unknown');
    case 'size':
    case 'limit':
      return fc.integer({ min: 1, max: 200 });
    case 'messageId':
    case 'around':
    case 'reply_to':
      return message;
    case 'channelId':
      return channel;
    case 'channel_id':
      return fc.oneof(channel, fc.constantFrom('#room', '#nope'));
    case 'to':
      return fc.oneof(principal, channel, fc.constantFrom('#room', '#nope'));
    case 'members':
    case 'queues':
      return fc.array(principal, { maxLength: 2 });
    case 'channels':
      return fc.array(channel, { maxLength: 2 });
    case 'attachments':
      return fc.constantFrom([], ['a_nope']);
    case 'idempotency_key':
      // Few keys, so the campaign retries (same request: the first result) and reuses (conflict).
      return fc.constantFrom('k1', 'k2', 'k3');
    case 'name':
      return fc.nat({ max: 50 }).map((n) => `room-${n}`);
    default:
      return hostileString;
  }
}

/**
 * A request with the method's own fields, each usually a plausible value (real names and ids of
 * the seeded host) and sometimes a hostile one, so the campaign reaches the host code behind the
 * schemas as well as the schemas.
 */
function targetedRequest(known: KnownIds): fc.Arbitrary<unknown> {
  return fc.constantFrom(...Object.keys(METHOD_FIELDS)).chain((method) => {
    const fields = METHOD_FIELDS[method] as string[];
    const entries = fields.map((field) =>
      fc.oneof(
        { weight: 6, arbitrary: plausibleFor(field, known).map((v) => [field, v] as const) },
        { weight: 1, arbitrary: hostileValue.map((v) => [field, v] as const) },
        // Cursors are left out most of the time: a plausible cursor does not exist.
        { weight: field === 'cursor' ? 8 : 1, arbitrary: fc.constant(undefined) },
      ),
    );
    return fc.tuple(fc.integer({ min: 1, max: 1_000_000 }), ...entries).map(([id, ...pairs]) => ({
      jsonrpc: '2.0',
      id,
      method,
      params: Object.fromEntries(pairs.filter((p) => p !== undefined)),
    }));
  });
}

const DEEP = 10_000;

/** A frame to send: JSON text (or bytes for a binary frame) and what kind of input it is. */
export interface RpcInput {
  kind: string;
  text: string;
  binary?: Uint8Array;
}

/** Builds a frame of `bytes` size that passes the server's frame limit. */
export function oversizedFrame(bytes: number): string {
  const head = '{"jsonrpc":"2.0","id":1,"method":"message.send","params":{"to":"#room","body":"';
  return `${head}${'x'.repeat(bytes - head.length - 3)}"}}`;
}

/** Every kind of bad frame the campaign sends, over WebSocket and POST alike. */
export function rpcInputs(
  maxFrameBytes: number,
  binary: boolean,
  known: KnownIds = { channels: [], messages: [] },
): fc.Arbitrary<RpcInput> {
  const request = requestObject.map((r) => ({ kind: 'request', text: JSON.stringify(r) }));
  const targeted = targetedRequest(known).map((r) => ({ kind: 'targeted', text: JSON.stringify(r) }));
  const kinds: fc.Arbitrary<RpcInput>[] = [
    // Well-formed frames with wrong params are the richest inputs: weight them up.
    request,
    targeted,
    targeted,
    targeted,
    fc.tuple(requestObject, fc.nat()).map(([r, cut]) => {
      const text = JSON.stringify(r);
      return { kind: 'truncated', text: text.slice(0, cut % Math.max(1, text.length)) };
    }),
    fc
      .tuple(
        fc.constantFrom(...METHODS),
        fc.constantFrom('1e999', '-1e999', '123456789012345678901234567890', '1e-999', '-0'),
      )
      .chain(([method, n]) =>
        fc.constantFrom(
          `{"jsonrpc":"2.0","id":${n},"method":"${method}"}`,
          `{"jsonrpc":"2.0","id":1,"method":"${method}","params":{"size":${n},"agent":"bot"}}`,
          `{"jsonrpc":"2.0","id":1,"method":"${method}","params":{"messageId":${n}}}`,
        ),
      )
      .map((text) => ({ kind: 'huge-number', text })),
    fc.constantFrom(...METHODS).map((method) => ({
      kind: 'deep-nesting',
      text: `{"jsonrpc":"2.0","id":1,"method":"${method}","params":{"agent":${'['.repeat(DEEP)}${']'.repeat(DEEP)}}}`,
    })),
    fc.constant({ kind: 'deep-frame', text: `${'['.repeat(DEEP)}${']'.repeat(DEEP)}` }),
    fc.constant({ kind: 'deep-object', text: `${'{"a":'.repeat(DEEP)}1${'}'.repeat(DEEP)}` }),
    fc.array(requestObject, { maxLength: 3 }).map((rs) => ({ kind: 'batch', text: JSON.stringify(rs) })),
    fc
      .oneof(
        fc.constantFrom(
          '',
          'null',
          '1',
          'true',
          '"text"',
          '{}',
          '[]',
          '{"jsonrpc":"2.0"}',
          '\u0000',
          '\ufeff{}',
        ),
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.constantFrom(
          '{"jsonrpc":"2.0","id":1,"id":2,"method":"host.hello"}',
          '{"jsonrpc":"2.0","id":1,"method":"queue.page","params":{"__proto__":{"agent":"bot"}}}',
          '{"jsonrpc":"2.0","id":1,"method":"constructor"}',
          '{"jsonrpc":"2.0","id":1,"method":"__proto__"}',
          '{"jsonrpc":"2.0","id":1,"method":"host.hello","params":{"client":"\\ud800"}}',
        ),
      )
      .map((text) => ({ kind: 'garbage', text })),
    fc.constant({ kind: 'oversized', text: oversizedFrame(maxFrameBytes + 1) }),
  ];
  if (binary) {
    kinds.push(
      fc.uint8Array({ maxLength: 200 }).map((bytes) => ({ kind: 'binary', text: '', binary: bytes })),
    );
  }
  return fc.oneof(...kinds);
}

/** Problems with one reply frame's text: shape, code, one-line message, no stack, not internal. */
export function replyProblems(raw: string): string[] {
  let msg: Record<string, unknown>;
  try {
    msg = JSON.parse(raw);
  } catch {
    return [`reply is not JSON: ${raw.slice(0, 120)}`];
  }
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return ['reply is not an object'];
  const problems: string[] = [];
  if (msg.jsonrpc !== '2.0') problems.push('reply lacks jsonrpc "2.0"');
  if (!('id' in msg)) problems.push('reply has no id');
  if ('result' in msg === 'error' in msg) problems.push('reply must have exactly one of result/error');
  if ('error' in msg) {
    const e = msg.error as { code?: unknown; message?: unknown; data?: { code?: unknown } };
    if (!Number.isInteger(e?.code)) problems.push('error without an integer code');
    if (typeof e?.message !== 'string' || e.message.includes('\n'))
      problems.push('error message is not one line');
    if (typeof e?.data?.code !== 'string') problems.push('error without data.code');
    if (e?.code === -32603) problems.push(`internal error: ${String(e.message).slice(0, 200)}`);
  }
  if (/\n\s+at /.test(raw)) problems.push('stack trace in a reply');
  return problems;
}

/** True when the frame is a JSON-RPC notification (an object without id): no reply is owed. */
function isNotification(text: string): boolean {
  try {
    const v = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) && !('id' in v);
  } catch {
    return false;
  }
}

/**
 * A send that succeeded stored its text exactly (DESIGN.md §8: stored exactly or refused). A
 * retried key returns the first message, whose request had the same body and subject.
 */
async function storedTextProblems(
  ctx: HostContext,
  input: string,
  reply: string | undefined,
): Promise<string[]> {
  let request: { method?: unknown; params?: { body?: unknown; subject?: unknown } };
  let result: { message_id?: unknown } | undefined;
  try {
    request = JSON.parse(input);
    result = JSON.parse(reply ?? 'null')?.result;
  } catch {
    return [];
  }
  if (request?.method !== 'message.send' || typeof result?.message_id !== 'string') return [];
  const row = await findMessageById(ctx.store.db, result.message_id);
  const problems: string[] = [];
  if (row?.body !== request.params?.body) problems.push('a sent body was stored altered');
  if ((row?.subject ?? undefined) !== request.params?.subject)
    problems.push('a sent subject was stored altered');
  return problems;
}

const hasError = (raw: string): boolean => {
  try {
    return 'error' in JSON.parse(raw);
  } catch {
    return true;
  }
};

const EXCHANGE_TIMEOUT_MS = 15_000;

/** A WebSocket client that keeps every frame and the close code, for exchange-by-probe. */
class ProbeSocket {
  readonly frames: string[] = [];
  closeCode: number | undefined;
  #wake: (() => void) | undefined;
  #probe = 0;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.frames.push(data.toString());
      this.#wake?.();
    });
    ws.on('close', (code) => {
      this.closeCode = code;
      this.#wake?.();
    });
    ws.on('error', () => {});
  }

  static open(url: string, token: string): Promise<ProbeSocket> {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/rpc`, {
      headers: { authorization: `Bearer ${token}` },
      maxPayload: 64 * 1024 * 1024,
    });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new ProbeSocket(ws)));
      ws.once('error', reject);
    });
  }

  /**
   * Sends the input, then a `host.hello` probe; resolves with every reply before the probe's
   * (notifications dropped), or with the close code, or `hung` when neither comes in time.
   */
  async exchange(input: RpcInput): Promise<{ replies: string[]; closeCode?: number; hung?: boolean }> {
    const probeId = `probe-${++this.#probe}`;
    const start = this.frames.length;
    if (input.binary) this.ws.send(input.binary, { binary: true });
    else this.ws.send(input.text);
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id: probeId, method: 'host.hello' }));
    const deadline = Date.now() + EXCHANGE_TIMEOUT_MS;
    for (;;) {
      const got = this.frames.slice(start);
      const at = got.findIndex((f) => f.includes(`"${probeId}"`) && JSON.parse(f).id === probeId);
      const replies = (at === -1 ? got : got.slice(0, at)).filter((f) => {
        try {
          const v = JSON.parse(f);
          return !(v && typeof v === 'object' && 'method' in v && !('id' in v));
        } catch {
          return true;
        }
      });
      if (at !== -1) {
        const probeProblems = replyProblems(got[at] as string);
        if (probeProblems.length > 0 || !('result' in JSON.parse(got[at] as string)))
          return { replies: [...replies, got[at] as string], hung: true };
        return { replies };
      }
      if (this.closeCode !== undefined) return { replies, closeCode: this.closeCode };
      const left = deadline - Date.now();
      if (left <= 0) return { replies, hung: true };
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  close(): void {
    this.ws.terminate();
  }
}

/**
 * JSON-RPC frames over a real WebSocket: every frame gets a well-formed error (or result) with a
 * code, an oversized frame closes the socket with 1009, a `host.hello` answers after each input,
 * and a refused input changes nothing.
 */
export async function fuzzRpcWebSocket(runs: number, seed: number): Promise<FuzzReport> {
  const host = await openFuzzHost();
  const failures: FuzzFailure[] = [];
  let inputs = 0;
  const token = await host.token('owner');
  let socket = await ProbeSocket.open(host.server.url, token);
  try {
    await fc.assert(
      fc.asyncProperty(
        rpcInputs(host.server.limits.maxFrameBytes, true, {
          channels: [host.roomId],
          messages: host.messageIds,
        }),
        async (input) => {
          inputs++;
          const label = `${input.kind}: ${(input.binary ? `<${input.binary.length} binary bytes>` : input.text).slice(0, 200)}`;
          const before = await stateSnapshot(host.ctx);
          const r = await socket.exchange(input);
          if (r.hung) failures.push({ input: label, problem: 'no host.hello answer after the input (hang)' });
          if (input.kind === 'oversized') {
            if (r.closeCode !== 1009)
              failures.push({ input: label, problem: `close code ${r.closeCode}, not 1009` });
          } else if (r.closeCode !== undefined) {
            failures.push({ input: label, problem: `socket closed with ${r.closeCode}` });
          }
          if (r.closeCode !== undefined || r.hung) {
            socket.close();
            socket = await ProbeSocket.open(host.server.url, token);
          }
          if (input.kind !== 'oversized') {
            const owed = !input.binary && isNotification(input.text) ? [0, 1] : [1];
            if (!r.hung && !owed.includes(r.replies.length))
              failures.push({ input: label, problem: `${r.replies.length} replies` });
          }
          for (const raw of r.replies) {
            for (const problem of replyProblems(raw)) failures.push({ input: label, problem });
          }
          if (!input.binary)
            for (const problem of await storedTextProblems(host.ctx, input.text, r.replies[0]))
              failures.push({ input: label, problem });
          const refused = input.kind === 'oversized' || r.replies.some(hasError);
          if (refused && (await stateSnapshot(host.ctx)) !== before)
            failures.push({ input: label, problem: 'state changed on a rejected input' });
        },
      ),
      { numRuns: runs, seed },
    );
  } finally {
    socket.close();
    await host.close();
  }
  return { surface: 'rpc websocket', inputs, failures };
}

/** The same frames as HTTP POST /rpc bodies: 200 + JSON-RPC reply, 204, or 413 with a JSON error. */
export async function fuzzRpcPost(runs: number, seed: number): Promise<FuzzReport> {
  const host = await openFuzzHost();
  const failures: FuzzFailure[] = [];
  let inputs = 0;
  // As the agent: the WebSocket campaign runs as the owner (a person), so both kinds of caller
  // are fuzzed.
  const token = await host.token('bot');
  const post = (body: string) =>
    fetch(`${host.server.url}/rpc`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(EXCHANGE_TIMEOUT_MS),
    });
  try {
    await fc.assert(
      fc.asyncProperty(
        rpcInputs(host.server.limits.maxFrameBytes, false, {
          channels: [host.roomId],
          messages: host.messageIds,
        }),
        async (input) => {
          inputs++;
          const label = `${input.kind}: ${input.text.slice(0, 200)}`;
          const before = await stateSnapshot(host.ctx);
          let refused = false;
          try {
            const res = await post(input.text);
            const body = await res.text();
            if (input.kind === 'oversized') {
              refused = true;
              if (res.status !== 413) failures.push({ input: label, problem: `HTTP ${res.status}, not 413` });
              try {
                JSON.parse(body);
              } catch {
                failures.push({ input: label, problem: `413 body is not JSON: ${body.slice(0, 100)}` });
              }
            } else if (res.status === 204) {
              if (!isNotification(input.text)) failures.push({ input: label, problem: '204 for a request' });
            } else if (res.status === 200) {
              for (const problem of replyProblems(body)) failures.push({ input: label, problem });
              for (const problem of await storedTextProblems(host.ctx, input.text, body))
                failures.push({ input: label, problem });
              refused = hasError(body);
            } else {
              failures.push({ input: label, problem: `HTTP ${res.status}: ${body.slice(0, 200)}` });
            }
          } catch (err) {
            failures.push({ input: label, problem: `request failed or hung: ${(err as Error).message}` });
          }
          try {
            const hello = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'host.hello' }));
            const answer = (await hello.json()) as Record<string, unknown>;
            if (hello.status !== 200 || !('result' in answer))
              failures.push({ input: label, problem: 'host.hello failed after the input' });
          } catch (err) {
            failures.push({
              input: label,
              problem: `host.hello hung after the input: ${(err as Error).message}`,
            });
          }
          if (refused && (await stateSnapshot(host.ctx)) !== before)
            failures.push({ input: label, problem: 'state changed on a rejected input' });
        },
      ),
      { numRuns: runs, seed },
    );
  } finally {
    await host.close();
  }
  return { surface: 'rpc http post', inputs, failures };
}
