// Channel creation per principal is rate-limited (issue 25 item 3): an invitation flood (a person
// creating group after group naming others) meets `rate_limited` with a retry-after, never a silent
// drop; the owner is exempt by default. First through the dispatcher with a clock the test moves,
// then through a served host (WebSocket and POST share one bucket).
import { afterEach, describe, expect, it } from 'vitest';
import { issueToken, type Principal } from '../../src/host/identity/principals.js';
import { channelCreateRateGate } from '../../src/surfaces/http/channel-create-rate.js';
import { parseHttpLimits } from '../../src/surfaces/http/limits.js';
import { handleRpcText } from '../../src/surfaces/rpc/dispatch.js';
import { DEFAULT_RPC_LIMITS } from '../../src/surfaces/rpc/methods.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { snapshotStore } from '../support/store-snapshot.js';
import { type Json, openServedHost, RpcClient, type ServedHost } from './support.js';

let t: TestHost | undefined;
let h: ServedHost | undefined;
afterEach(async () => {
  await t?.close();
  await h?.close();
  t = undefined;
  h = undefined;
});

describe('channel.create rate per principal', () => {
  it('an invitation flood meets rate_limited after the burst; refused calls store nothing; time refills', async () => {
    t = await openTestHost();
    const host = t;
    const mallory = await host.person('mallory');
    await host.person('alice');
    let now = 1_000_000;
    const admitChannelCreate = channelCreateRateGate(
      { channelCreateBurst: 20, channelCreatesPerMinute: 1, rateLimitOwner: 0 },
      () => now,
    );
    const rpc = async (principal: Principal, method: string, params: unknown): Promise<Json> =>
      JSON.parse(
        (await handleRpcText(
          { ctx: host.ctx, principal, limits: DEFAULT_RPC_LIMITS, admitChannelCreate },
          JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        )) ?? 'null',
      );
    const outcomes: string[] = [];
    for (let i = 0; i < 300; i++) {
      const before = i === 25 ? await snapshotStore(host.ctx) : undefined;
      const reply = await rpc(mallory, 'channel.create', { name: `spam-${i}`, members: ['owner', 'alice'] });
      outcomes.push(reply.error?.data.code ?? 'ok');
      if (reply.error) {
        expect(reply.error.code).toBe(-32029);
        expect(reply.error.data.retryAfterMs).toBeGreaterThan(0);
        expect(reply.error.data.retryAfterMs).toBeLessThanOrEqual(60_000);
        expect(reply.error.message).toMatch(/retry in \d+ s; nothing was created$/);
      }
      if (before) expect(await snapshotStore(host.ctx)).toEqual(before);
    }
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(20);
    expect(outcomes.filter((o) => o === 'rate_limited')).toHaveLength(280);
    // Invalid params are refused before the bucket: they cost nothing.
    expect((await rpc(mallory, 'channel.create', { name: 'x', extra: true })).error.data.code).toBe(
      'invalid_params',
    );
    // The owner is exempt by default.
    for (let i = 0; i < 30; i++) {
      expect(
        (await rpc(host.owner, 'channel.create', { name: `own-${i}`, members: [] })).error,
      ).toBeUndefined();
    }
    // A minute later, one more.
    now += 60_000;
    expect((await rpc(mallory, 'channel.create', { name: 'later', members: [] })).result.name).toBe('later');
    expect((await rpc(mallory, 'channel.create', { name: 'later2', members: [] })).error.data.code).toBe(
      'rate_limited',
    );
  });

  it('a served host applies channelCreateBurst over WebSocket and POST together', async () => {
    h = await openServedHost({ httpLimits: { channelCreateBurst: 2, channelCreatesPerMinute: 1 } });
    await h.person('mallory');
    const token = await issueToken(h.ctx, 'mallory');
    const ws = await RpcClient.connect(h.server.url, token);
    expect((await ws.call('channel.create', { name: 'one', members: ['owner'] })).result.invited).toEqual([
      'owner',
    ]);
    const post = async (name: string) => {
      const res = await fetch(`${h?.server.url}/rpc`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'channel.create',
          params: { name, members: [] },
        }),
      });
      return (await res.json()) as Json;
    };
    expect((await post('two')).result.name).toBe('two');
    const refused = await ws.call('channel.create', { name: 'three', members: ['owner'] });
    expect(refused.error?.code).toBe(-32029);
    expect(refused.error?.data.code).toBe('rate_limited');
    expect((await post('four')).error.data.code).toBe('rate_limited');
    ws.close();
    const names = await h.ctx.store.db
      .selectFrom('channels')
      .select('name')
      .where('kind', '=', 'group')
      .execute();
    expect(names.map((r) => r.name).sort()).toEqual(['one', 'two']);
  });

  it('reads the settings from SLUICE_HTTP_LIMITS', () => {
    expect(parseHttpLimits('channelCreateBurst=5,channelCreatesPerMinute=2')).toEqual({
      channelCreateBurst: 5,
      channelCreatesPerMinute: 2,
    });
    expect(() => parseHttpLimits('channelCreatesPerMinute=0')).toThrow(/positive integer/);
  });
});
