import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addPrincipal } from '../../src/host/identity/principals.js';
import { openServedHost, type ServedHost } from './support.js';

describe('principal.list', () => {
  let host: ServedHost;
  beforeEach(async () => {
    host = await openServedHost();
    await addPrincipal(host.ctx, { name: 'alice', kind: 'person' });
    await addPrincipal(host.ctx, { name: 'helper', kind: 'agent' });
    await addPrincipal(host.ctx, { name: 'zed', kind: 'agent' });
  });
  afterEach(() => host.close());

  it('lets any signed-in principal, even an agent, list every name and kind and nothing more', async () => {
    const agent = await host.client('zed');
    const reply = await agent.ok('principal.list', {});
    expect(reply.principals.map((p: { name: string }) => p.name)).toEqual([
      'alice',
      'helper',
      'owner',
      'zed',
    ]);
    expect(reply.principals[0]).toEqual({ id: expect.any(String), name: 'alice', kind: 'person' });
    expect(reply.nextAfter).toBeNull();
  });

  it('pages in name order by the last name seen', async () => {
    const owner = await host.client();
    const first = await owner.ok('principal.list', { limit: 2 });
    expect(first.principals.map((p: { name: string }) => p.name)).toEqual(['alice', 'helper']);
    expect(first.nextAfter).toBe('helper');
    const second = await owner.ok('principal.list', { limit: 2, after: first.nextAfter });
    expect(second.principals.map((p: { name: string }) => p.name)).toEqual(['owner', 'zed']);
    expect(second.nextAfter).toBeNull();
  });

  it('refuses unknown fields and out-of-range limits with one line', async () => {
    const owner = await host.client();
    const unknown = await owner.call('principal.list', { kind: 'agent' });
    expect(unknown.error?.data.code).toBe('invalid_params');
    expect(unknown.error?.message).toContain('"kind"');
    for (const limit of [0, 201]) {
      const reply = await owner.call('principal.list', { limit });
      expect(reply.error?.data.code).toBe('invalid_params');
    }
  });
});
