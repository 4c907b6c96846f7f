import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import { quoteInput } from '../../../core/text.js';
import {
  acceptInvitation,
  addMember,
  blockInviter,
  channelMembers,
  createChannel,
  declineInvitation,
  leaveChannel,
  listAllChannels,
  listAllInvitations,
  listBlockedInviters,
  peekTarget,
  recentProjections,
  removeMember,
  resolveTarget,
  unblockInviter,
} from '../../../host/channels/index.js';
import type { HostContext, Principal } from '../../../host/identity/index.js';
import { relationsFor, senderLabelOf, withSender } from '../../../host/messages/index.js';
import { displayChannel } from '../../../host/queue/index.js';
import { action } from '../context.js';
import { parseLimit, writeOut } from '../io.js';
import { writeList } from '../list-output.js';
import { oneLine, quotedBody, terminalLine } from '../message-text.js';

/**
 * The channel a read names: `#NAME`, a channel id, a DM as `channel ls` prints it (`dm:a,b`), or
 * a principal (your DM with them; undefined while you have none). Creates nothing.
 */
async function channelToRead(host: HostContext, me: Principal, ref: string) {
  if (!/^dm:[^,]+(,[^,]+)?$/.test(ref)) return peekTarget(host, me, ref);
  try {
    return await resolveTarget(host, me, `#${ref}`);
  } catch (err) {
    if (err instanceof SluiceError && err.code === 'not_found')
      throw new SluiceError('not_found', `no DM named ${quoteInput(ref)} (sluice channel ls lists yours)`);
    throw err;
  }
}

export function registerChannelCommands(program: Command): void {
  const channel = program.command('channel').description('channels and their history');
  channel
    .command('create <name>')
    .description('create a group channel; you and the agents you manage join, other people are invited')
    // Optional, as on the page: a channel of just its creator, others added later.
    .option('--members <names>', 'comma-separated principal names (default: just you)')
    .action(
      action(async ({ host, actor }, name: string, opts: { members?: string }) => {
        const members = (opts.members ?? '')
          .split(',')
          .map((m) => m.trim())
          .filter((m) => m !== '');
        const row = await createChannel(host, await actor(), { name, members });
        const invited = row.invited.length
          ? `\ninvited (they join when they accept): ${row.invited.join(',')}`
          : '';
        await writeOut(`#${row.name}${invited}\n`);
      }),
    );

  channel
    .command('ls')
    .description('list your channels')
    .option('--json', 'print JSON')
    .action(
      action(async ({ host, actor }, opts: { json?: boolean }) => {
        const rows = await listAllChannels(host, await actor());
        await writeList(rows, {
          json: opts.json,
          toJson: (c) => ({ ...c, name: displayChannel(c.name) }),
          empty: 'no channels',
          columns: [
            { header: 'NAME', cell: (c) => displayChannel(c.name) },
            { header: 'KIND', cell: (c) => c.kind },
            {
              header: 'MEMBERS',
              cell: (c) =>
                `${c.members.map((m) => m.name).join(',')}${c.memberCount > c.members.length ? ` (+${c.memberCount - c.members.length})` : ''}`,
            },
          ],
        });
      }),
    );

  channel
    .command('members <channel>')
    .description('who is in #channel (or a DM: dm:a,b or a principal name)')
    .option('--json', 'print [{name, kind}]')
    .action(
      action(async ({ host, actor }, ref: string, opts: { json?: boolean }) => {
        const me = await actor();
        const ch = await channelToRead(host, me, ref);
        if (!ch) throw new SluiceError('not_found', `you have no DM with ${ref} yet`);
        const members = await channelMembers(host, me, ch.id);
        await writeList(members, {
          json: opts.json,
          toJson: (m) => ({ name: m.name, kind: m.kind }),
          empty: 'no members',
          columns: [
            { header: 'NAME', cell: (m) => m.name },
            { header: 'KIND', cell: (m) => m.kind },
          ],
        });
      }),
    );

  channel
    .command('add <channel> <member>')
    .description(
      'add an agent you manage to a group you are in, or invite a person (they join when they accept)',
    )
    .action(
      action(async ({ host, actor }, ref: string, member: string) => {
        const change = await addMember(host, await actor(), ref, member);
        await writeOut(change.invited.length ? `invited ${member}\n` : `added ${member}\n`);
      }),
    );

  channel
    .command('remove <channel> <member>')
    .description("remove a member (the channel's creator), or withdraw an invitation")
    .action(
      action(async ({ host, actor }, ref: string, member: string) => {
        await removeMember(host, await actor(), ref, member);
        await writeOut(`removed ${member}\n`);
      }),
    );

  channel
    .command('leave <channel>')
    .description('leave a group channel (#NAME or id); an agent keeps its pending messages for a rejoin')
    .action(
      action(async ({ host, actor }, ref: string) => {
        const row = await leaveChannel(host, await actor(), ref);
        await writeOut(`left #${row.name}\n`);
      }),
    );

  registerInvitationCommands(channel);

  channel
    .command('history <target>')
    .description('recent messages of #channel or a DM (dm:a,b or a principal name), oldest first')
    .option('--json', 'print JSON projections')
    .option('--limit <n>', 'how many (default 20)')
    .action(
      action(async ({ host, actor }, target: string, opts: { json?: boolean; limit?: string }) => {
        const limit = parseLimit(opts.limit, '--limit', 1000, 20);
        const me = await actor();
        const ch = await channelToRead(host, me, target);
        const projections = ch ? await recentProjections(host, me, ch.id, limit) : [];
        // Provenance: what each author is to the reader (an agent may run this too).
        const relationOf = await relationsFor(host, me);
        if (opts.json) {
          await writeOut(`${JSON.stringify(projections.map((p) => withSender(p, relationOf)))}\n`);
          return;
        }
        const lines = projections.map((p) => {
          const head = `${p.created_at} ${senderLabelOf(p, relationOf)} [${p.message_id}]:`;
          return oneLine(p.body) ? `${head} ${terminalLine(p.body)}` : `${head}\n${quotedBody(p.body)}`;
        });
        await writeOut(lines.length ? `${lines.join('\n')}\n` : 'no messages\n');
      }),
    );
}

/** Invitations and blocks: consent before membership (docs/security.md, "Consent"). */
function registerInvitationCommands(channel: Command): void {
  channel
    .command('invitations')
    .description('channels you are invited to (accept or decline each)')
    .option('--json', 'print JSON')
    .action(
      action(async ({ host, actor }, opts: { json?: boolean }) => {
        const rows = await listAllInvitations(host, await actor());
        await writeList(rows, {
          json: opts.json,
          empty: 'no invitations',
          columns: [
            { header: 'CHANNEL', cell: (r) => `#${r.channel.name}` },
            { header: 'ID', cell: (r) => r.channel.id },
            { header: 'INVITED BY', cell: (r) => r.invitedBy.name },
            { header: 'SINCE', cell: (r) => r.createdAt },
          ],
        });
      }),
    );

  channel
    .command('accept <channel>')
    .description('accept an invitation (#NAME or id) and join the channel')
    .action(
      action(async ({ host, actor }, ref: string) => {
        const row = await acceptInvitation(host, await actor(), ref);
        await writeOut(`joined #${row.name}\n`);
      }),
    );

  channel
    .command('decline <channel>')
    .description('decline an invitation (#NAME or id); the inviter is not told')
    .action(
      action(async ({ host, actor }, ref: string) => {
        await declineInvitation(host, await actor(), ref);
        await writeOut('declined\n');
      }),
    );

  channel
    .command('block <name>')
    .description("refuse NAME's invitations from now on (drops those pending; NAME is not told)")
    .action(
      action(async ({ host, actor }, name: string) => {
        const done = await blockInviter(host, await actor(), name);
        const dropped = done.dropped > 0 ? ` (${done.dropped} pending invitations dropped)` : '';
        await writeOut(`blocked ${done.name}${dropped}\n`);
      }),
    );

  channel
    .command('unblock <name>')
    .description("let NAME's invitations reach you again")
    .action(
      action(async ({ host, actor }, name: string) => {
        const done = await unblockInviter(host, await actor(), name);
        await writeOut(done.unblocked ? `unblocked ${done.name}\n` : `${done.name} was not blocked\n`);
      }),
    );

  channel
    .command('blocked')
    .description('whose invitations you refuse')
    .option('--json', 'print JSON')
    .action(
      action(async ({ host, actor }, opts: { json?: boolean }) => {
        const rows = await listBlockedInviters(host, await actor());
        await writeList(rows, {
          json: opts.json,
          empty: 'nobody blocked',
          columns: [
            { header: 'NAME', cell: (r) => r.name },
            { header: 'KIND', cell: (r) => r.kind },
            { header: 'SINCE', cell: (r) => r.created_at },
          ],
        });
      }),
    );
}
