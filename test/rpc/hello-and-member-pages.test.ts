// What the web page asks the host instead of deciding itself (issue 14 read-back): `host.hello`
// says whether the caller may add an agent, and `channel.members` pages through every member of a
// channel (the `channel.list` row holds only the first 50).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createChannel } from '../../src/host/channels/channels.js';
import { addPrincipal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { type Json, openServedHost, type ServedHost } from './support.js';

describe('host.hello says whether the caller may add an agent', () => {
  let host: ServedHost;
  beforeAll(async () => {
    host = await openServedHost();
    await addPrincipal(host.ctx, { name: 'alice', kind: 'person' });
    await addPrincipal(host.ctx, { name: 'helper', kind: 'agent' });
  });
  afterAll(() => host.close());

  it.each([
    ['owner', true],
    ['alice', false],
    ['helper', false],
  ])('%s: canAddAgent is %s, as principal.addAgent decides', async (name, expected) => {
    const client = await host.client(name);
    const hello = await client.ok('host.hello', {});
    expect(hello.canAddAgent).toBe(expected);
    const added = await client.call('principal.addAgent', { name: `by-${name}` });
    expect(added.result !== undefined).toBe(expected);
  });

  it('says the same in the HTTP POST the page makes before it opens its socket', async () => {
    for (const [name, expected] of [
      ['owner', true],
      ['alice', false],
    ] as const) {
      const response = await fetch(`${host.server.url}/rpc`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          cookie: await host.sessionCookie(name),
          origin: host.server.url,
          'sec-fetch-site': 'same-origin',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'host.hello', params: {} }),
      });
      const body = (await response.json()) as Json;
      expect(body.result.canAddAgent).toBe(expected);
    }
  });
});

describe('channel.members pages through every member', () => {
  const MEMBERS = 230;
  let host: ServedHost;
  let crowd: string;
  let small: string;
  let names: string[];
  beforeAll(async () => {
    host = await openServedHost({ limits: { replyBytes: 6 * 1024 } });
    const owner = await resolvePrincipal(host.ctx, 'owner');
    names = ['owner'];
    for (let i = 0; i < MEMBERS - 1; i++) {
      const name = `m-${String(i).padStart(3, '0')}`;
      await addPrincipal(host.ctx, { name, kind: i % 3 === 0 ? 'agent' : 'person' });
      names.push(name);
    }
    await addPrincipal(host.ctx, { name: 'outsider', kind: 'person' });
    crowd = (await createChannel(host.ctx, owner, { name: 'crowd', members: names.slice(1, 100) })).id;
    for (const name of names.slice(100)) await addMember(host.ctx, owner, crowd, name);
    small = (await createChannel(host.ctx, owner, { name: 'small', members: ['m-001'] })).id;
    names.sort();
  }, 120_000);
  afterAll(() => host.close());

  async function walk(client: Json, params: Record<string, unknown>) {
    const pages: Json[] = [];
    let cursor: string | null = null;
    do {
      const reply: Json = await client.call('channel.members', cursor ? { ...params, cursor } : params);
      expect(reply.bytes).toBeLessThanOrEqual(6 * 1024);
      expect(reply.error).toBeUndefined();
      pages.push(reply.result);
      cursor = reply.result.nextCursor;
    } while (cursor !== null);
    return pages;
  }

  it('visits every member once, in name order, within the reply budget, each page with the count', async () => {
    const owner = await host.client();
    const pages = await walk(owner, { channelId: crowd });
    expect(pages.length).toBeGreaterThan(2);
    const listed = pages.flatMap((p) => p.members.map((m: Json) => m.name));
    expect(listed).toEqual(names);
    for (const page of pages) expect(page).toMatchObject({ channelId: crowd, memberCount: MEMBERS });
    const kinds = pages.flatMap((p) => p.members).filter((m: Json) => m.name === 'm-000');
    expect(kinds).toEqual([{ id: expect.any(String), name: 'm-000', kind: 'agent' }]);
  });

  it('honours limit, and a small channel fits one page', async () => {
    const owner = await host.client();
    const pages = await walk(owner, { channelId: crowd, limit: 7 });
    expect(pages.every((p) => p.members.length <= 7)).toBe(true);
    expect(pages.flatMap((p) => p.members.map((m: Json) => m.name))).toEqual(names);
    const one = await owner.ok('channel.members', { channelId: small });
    expect(one.members.map((m: Json) => m.name)).toEqual(['m-001', 'owner']);
    expect(one).toMatchObject({ memberCount: 2, nextCursor: null });
    const bad = await owner.call('channel.members', { channelId: small, limit: 201 });
    expect(bad.error?.data.code).toBe('invalid_params');
  });

  it('refuses a non-member, and a cursor from another caller or for another channel', async () => {
    const owner = await host.client();
    const first = await owner.ok('channel.members', { channelId: crowd, limit: 5 });
    const outsider = await host.client('outsider');
    expect((await outsider.call('channel.members', { channelId: crowd })).error?.data.code).toBe(
      'not_member',
    );
    const member = await host.client('m-005');
    const stolen = await member.call('channel.members', { channelId: crowd, cursor: first.nextCursor });
    expect(stolen.error?.data.code).toBe('invalid_cursor');
    const moved = await owner.call('channel.members', { channelId: small, cursor: first.nextCursor });
    expect(moved.error?.data.code).toBe('invalid_cursor');
  });
});
