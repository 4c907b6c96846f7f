import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addPrincipal } from '../../src/host/identity/principals.js';
import { findQueue } from '../../src/store/ops/queues.js';
import { snapshotStore } from '../support/store-snapshot.js';
import { openServedHost, type ServedHost } from './support.js';

describe('principal.addAgent (the owner adds an agent from the page)', () => {
  let host: ServedHost;
  beforeEach(async () => {
    host = await openServedHost();
    await addPrincipal(host.ctx, { name: 'alice', kind: 'person' });
    await addPrincipal(host.ctx, { name: 'helper', kind: 'agent' });
  });
  afterEach(() => host.close());

  it('adds an agent with its queue and the chosen settlement', async () => {
    const owner = await host.client();
    const added = await owner.ok('principal.addAgent', { name: 'builder', settlement: 'turn' });
    expect(added).toEqual({ id: expect.any(String), name: 'builder', kind: 'agent', settlement: 'turn' });
    expect(await findQueue(host.ctx.store.db, added.id)).toBeDefined();
    const plain = await owner.ok('principal.addAgent', { name: 'reader' });
    expect(plain.settlement).toBe('explicit');
    const listed = await owner.ok('principal.list', {});
    expect(listed.principals.map((p: { name: string }) => p.name)).toContain('builder');
  });

  it('refuses anyone but the owner (a person, an agent) and changes nothing', async () => {
    for (const name of ['alice', 'helper']) {
      const client = await host.client(name);
      const before = await snapshotStore(host.ctx);
      const reply = await client.call('principal.addAgent', { name: 'sneaky' });
      expect(reply.error?.data?.code ?? reply.error?.message).toBeDefined();
      expect(reply.error?.message).toMatch(/only the owner may add an agent/);
      expect(await snapshotStore(host.ctx)).toEqual(before);
    }
  });

  it('refuses a taken or invalid name and an unknown settlement in one line, changing nothing', async () => {
    const owner = await host.client();
    const before = await snapshotStore(host.ctx);
    const taken = await owner.call('principal.addAgent', { name: 'alice' });
    expect(taken.error?.message).toMatch(/already exists/);
    const invalid = await owner.call('principal.addAgent', { name: 'no spaces' });
    expect(invalid.error?.message).toMatch(/invalid name/);
    const settlement = await owner.call('principal.addAgent', { name: 'x', settlement: 'sometimes' });
    expect(settlement.error?.message).toMatch(/settlement/);
    for (const r of [taken, invalid, settlement]) expect(r.error?.message).not.toContain('\n');
    expect(await snapshotStore(host.ctx)).toEqual(before);
  });
});
