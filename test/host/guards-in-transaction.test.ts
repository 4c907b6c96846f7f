// Reproductions from the third round's security field test: writes whose guard ran before their
// transaction (an edit and a read mark by a member removed meanwhile), an agent removed from a
// channel archiving that channel's hidden entries, and an invitation answer by channel id naming
// a channel to an outsider. On both backends; each refusal changes nothing.
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createChannel, removeMember } from '../../src/host/channels/channels.js';
import { acceptInvitation, declineInvitation } from '../../src/host/channels/invitations.js';
import { markRead } from '../../src/host/channels/read-marks.js';
import type { HostContext } from '../../src/host/identity/context.js';
import { editMessage } from '../../src/host/messages/edit-message.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { archiveMessages } from '../../src/host/queue/inbox.js';
import type { Store } from '../../src/store/store.js';
import { backendsUnderTest, type ConformanceHost, conformanceHostSeries } from '../conformance/backend.js';
import { snapshotStore } from '../support/store-snapshot.js';

/**
 * The host with `beforeWrite` run once just before its next write transaction begins: the moment
 * another principal's change lands between a call's reads and its write.
 */
function withChangeBeforeNextWrite(ctx: HostContext, beforeWrite: () => Promise<void>): HostContext {
  let pending: (() => Promise<void>) | undefined = beforeWrite;
  const store = new Proxy(ctx.store, {
    get(target, key) {
      if (key === 'transaction') {
        return async (fn: Parameters<Store['transaction']>[0]) => {
          const change = pending;
          pending = undefined;
          if (change) await change();
          return target.transaction(fn);
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { ...ctx, store };
}

describe.each(backendsUnderTest())('guards that hold until the write commits (%s)', (backend) => {
  let h: ConformanceHost;
  const hosts = conformanceHostSeries(backend, 'guards');
  afterAll(() => hosts.release());
  beforeEach(async () => {
    h = await hosts.open();
  });
  afterEach(async () => {
    await h.close();
  });

  it('an edit by an author removed just before its write is refused, and the message keeps its text', async () => {
    const mallory = await h.person('mallory');
    const ch = await createChannel(h.ctx, h.owner, { name: 'race', members: ['mallory'] });
    const sent = await sendMessage(h.ctx, mallory, { to: ch.id, body: 'original' });
    let before: unknown;
    const racing = withChangeBeforeNextWrite(h.ctx, async () => {
      await removeMember(h.ctx, h.owner, ch.id, 'mallory');
      before = await snapshotStore(h.ctx);
    });
    await expect(
      editMessage(racing, mallory, sent.message_id, { body: 'EDITED AFTER REMOVAL' }),
    ).rejects.toMatchObject({ code: 'not_member' });
    expect(await snapshotStore(h.ctx)).toEqual(before);
    const row = await h.ctx.store.db
      .selectFrom('messages')
      .select(['body', 'revision'])
      .where('id', '=', sent.message_id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ body: 'original', revision: 1 });
  });

  it('a read mark by a member removed just before its write is refused and stores nothing', async () => {
    const mallory = await h.person('mallory');
    const ch = await createChannel(h.ctx, h.owner, { name: 'race', members: ['mallory'] });
    const sent = await sendMessage(h.ctx, h.owner, { to: ch.id, body: 'read me' });
    let before: unknown;
    const racing = withChangeBeforeNextWrite(h.ctx, async () => {
      await removeMember(h.ctx, h.owner, ch.id, 'mallory');
      before = await snapshotStore(h.ctx);
    });
    await expect(markRead(racing, mallory, sent.message_id)).rejects.toMatchObject({ code: 'not_member' });
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });

  it('an agent removed from a channel cannot archive its hidden entries there; its own DMs still archive', async () => {
    const helper = await h.agent('helper');
    const alice = await h.person('alice');
    const secret = await createChannel(h.ctx, h.owner, { name: 'secret', members: ['helper', 'alice'] });
    const task = await sendMessage(h.ctx, alice, { to: secret.id, body: 'task for helper' });
    const dm = await sendMessage(h.ctx, h.owner, { to: 'helper', body: 'a direct task' });
    await removeMember(h.ctx, h.owner, secret.id, 'helper');
    const before = await snapshotStore(h.ctx);
    await expect(archiveMessages(h.ctx, helper, [task.message_id])).rejects.toMatchObject({
      code: 'not_member',
    });
    // One hidden id fails the whole call, a readable one with it included.
    await expect(archiveMessages(h.ctx, helper, [dm.message_id, task.message_id])).rejects.toMatchObject({
      code: 'not_member',
    });
    expect(await snapshotStore(h.ctx)).toEqual(before);
    const [receipt] = await archiveMessages(h.ctx, helper, [dm.message_id]);
    expect(receipt).toMatchObject({ id: dm.message_id, already: false });
  });

  it('answering an invitation by channel id never names a channel the caller is not in', async () => {
    const carol = await h.person('carol');
    const ch = await createChannel(h.ctx, h.owner, { name: 'acquisition-target-zeta', members: [] });
    const unknownId = `${ch.id.slice(0, -4)}zzzz`;
    const before = await snapshotStore(h.ctx);
    for (const answer of [acceptInvitation, declineInvitation]) {
      const known = await answer(h.ctx, carol, ch.id).then(
        () => undefined,
        (e: Error & { code?: string }) => e,
      );
      const unknown = await answer(h.ctx, carol, unknownId).then(
        () => undefined,
        (e: Error & { code?: string }) => e,
      );
      expect(known?.code).toBe('not_found');
      expect(known?.message).not.toContain('acquisition');
      // The same answer as for an id that does not exist, but for the id itself.
      expect(known?.message.replace(ch.id, 'ID')).toBe(unknown?.message.replace(unknownId, 'ID'));
    }
    // By name, the caller typed it: whether it exists is all they learn (as before).
    await expect(acceptInvitation(h.ctx, carol, '#acquisition-target-zeta')).rejects.toThrow(
      'you have no invitation to #acquisition-target-zeta',
    );
    // A member asking by id hears about their own channel.
    await expect(acceptInvitation(h.ctx, h.owner, ch.id)).rejects.toThrow(
      'you have no invitation to #acquisition-target-zeta',
    );
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });
});
