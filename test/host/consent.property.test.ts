// Consent as an invariant (issue 25 item 3): after any mix of creates, adds, accepts, declines,
// blocks, unblocks, leaves and removals by people, the owner and an agent, every person who is a
// member of a group got there by their own act (creating it, accepting an invitation, adding
// themself) or by the owner's (a documented decision) — never by someone else naming them. And no
// invitation waits from an inviter its invitee blocks.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { addMember, createChannel, leaveChannel, removeMember } from '../../src/host/channels/channels.js';
import {
  acceptInvitation,
  blockInviter,
  declineInvitation,
  unblockInviter,
} from '../../src/host/channels/invitations.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { listActiveMembers } from '../../src/store/ops/channels.js';
import { blocksInvitationsFrom } from '../../src/store/ops/invitation-blocks.js';
import { listInvitationsPageOf } from '../../src/store/ops/invitations.js';
import { openTestHost, type TestHost } from '../support/host.js';

let t: TestHost;
let run = 0;

beforeAll(async () => {
  t = await openTestHost();
});
afterAll(async () => t?.close());

/** Who acts or is named: 0 is the owner, 1-3 persons, 4 an agent. */
const who = fc.integer({ min: 0, max: 4 });
const pick = fc.nat({ max: 7 });

type Op =
  | { kind: 'create'; actor: number; members: number[] }
  | { kind: 'add' | 'remove'; actor: number; channel: number; member: number }
  | { kind: 'accept' | 'decline' | 'leave'; actor: number; channel: number }
  | { kind: 'block' | 'unblock'; actor: number; member: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('create' as const),
    actor: who,
    members: fc.uniqueArray(who, { maxLength: 4 }),
  }),
  fc.record({
    kind: fc.constantFrom('add' as const, 'remove' as const),
    actor: who,
    channel: pick,
    member: who,
  }),
  fc.record({
    kind: fc.constantFrom('accept' as const, 'decline' as const, 'leave' as const),
    actor: who,
    channel: pick,
  }),
  fc.record({ kind: fc.constantFrom('block' as const, 'unblock' as const), actor: who, member: who }),
);

it('membership is never granted without the person’s consent (or the owner’s act)', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 20 }), async (ops) => {
      run += 1;
      const cast: Principal[] = [
        t.owner,
        await t.person(`alice${run}`),
        await t.person(`bob${run}`),
        await t.person(`carol${run}`),
        await t.agent(`bot${run}`),
      ];
      const channels: string[] = [];
      /** `${channelId} ${personId}`: the person's own act, or the owner's, put them in. */
      const consented = new Set<string>();
      const consent = (channelId: string, p: Principal) => consented.add(`${channelId} ${p.id}`);
      const isOwner = (p: Principal) => p.id === t.owner.id;
      for (const o of ops) {
        const actor = cast[o.actor]!;
        const channel = 'channel' in o ? channels[o.channel % Math.max(1, channels.length)] : undefined;
        try {
          if (o.kind === 'create') {
            const names = o.members.map((i) => cast[i]!.name);
            const made = await createChannel(t.ctx, actor, {
              name: `c${run}-${channels.length}`,
              members: names,
            });
            channels.push(made.id);
            consent(made.id, actor);
            if (isOwner(actor)) for (const i of o.members) consent(made.id, cast[i]!);
          } else if (o.kind === 'block' || o.kind === 'unblock') {
            const target = cast[o.member]!.name;
            await (o.kind === 'block' ? blockInviter : unblockInviter)(t.ctx, actor, target);
          } else if (channel !== undefined) {
            if (o.kind === 'add') {
              const member = cast[o.member]!;
              await addMember(t.ctx, actor, channel, member.name);
              if (isOwner(actor) || member.id === actor.id) consent(channel, member);
            } else if (o.kind === 'remove') await removeMember(t.ctx, actor, channel, cast[o.member]!.name);
            else if (o.kind === 'accept') {
              await acceptInvitation(t.ctx, actor, channel);
              consent(channel, actor);
            } else if (o.kind === 'decline') await declineInvitation(t.ctx, actor, channel);
            else await leaveChannel(t.ctx, actor, channel);
          }
        } catch (err) {
          // Refusals are part of the game; anything but a one-line Sluice error is a bug.
          expect((err as { name?: string }).name).toBe('SluiceError');
        }
      }
      for (const channelId of channels) {
        for (const m of await listActiveMembers(t.ctx.store.db, channelId)) {
          if (m.kind === 'person')
            expect(consented.has(`${channelId} ${m.id}`), `${m.name} in ${channelId}`).toBe(true);
        }
      }
      for (const p of cast) {
        for (const inv of await listInvitationsPageOf(t.ctx.store.db, p.id, { limit: 1000 })) {
          expect(await blocksInvitationsFrom(t.ctx.store.db, p.id, inv.invitedBy.id)).toBe(false);
        }
      }
    }),
    { numRuns: 40 },
  );
}, 120_000);
