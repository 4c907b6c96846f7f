import type { Command } from 'commander';
import { SluiceError } from '../../../core/errors.js';
import {
  acceptInvitation,
  addMember,
  createChannel,
  declineInvitation,
  leaveChannel,
  listAllChannels,
  listInvitationsPage,
  removeMember,
  resolveTarget,
} from '../../../host/channels.js';
import { displayChannel } from '../../../host/inbox.js';
import { loadProjections } from '../../../host/messages.js';
import { listChannelHistory } from '../../../store/ops/messages.js';
import { action } from '../context.js';
import { parseLimit, writeOut } from '../io.js';

export function registerChannelCommands(program: Command): void {
  const channel = program.command('channel').description('channels and their history');
  channel
    .command('create <name>')
    .description('create a group channel; you and the agents named join, other people are invited')
    .requiredOption('--members <names>', 'comma-separated principal names')
    .action(
      action(async ({ host, actor }, name: string, opts: { members: string }) => {
        const members = opts.members
          .split(',')
          .map((m) => m.trim())
          .filter((m) => m !== '');
        if (members.length === 0)
          throw new SluiceError('invalid_params', '--members needs at least one name');
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
        if (opts.json) {
          await writeOut(`${JSON.stringify(rows.map((c) => ({ ...c, name: displayChannel(c.name) })))}\n`);
          return;
        }
        const lines = rows.map(
          (c) => `${displayChannel(c.name)}\t${c.kind}\t${c.members.map((m) => m.name).join(',')}`,
        );
        await writeOut(lines.length ? `${lines.join('\n')}\n` : 'no channels\n');
      }),
    );

  channel
    .command('add <channel> <member>')
    .description('add an agent to a group you are in, or invite a person (they join when they accept)')
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

  channel
    .command('invitations')
    .description('channels you are invited to')
    .option('--json', 'print JSON')
    .action(
      action(async ({ host, actor }, opts: { json?: boolean }) => {
        const me = await actor();
        const rows = [];
        let cursor: string | undefined;
        do {
          const page = await listInvitationsPage(host, me, { cursor, limit: 200 });
          rows.push(...page.invitations);
          cursor = page.nextCursor ?? undefined;
        } while (cursor !== undefined);
        if (opts.json) {
          await writeOut(`${JSON.stringify(rows)}\n`);
          return;
        }
        const lines = rows.map((r) => `#${r.channel.name}\tfrom ${r.invitedBy.name}\t${r.createdAt}`);
        await writeOut(lines.length ? `${lines.join('\n')}\n` : 'no invitations\n');
      }),
    );

  channel
    .command('accept <channel>')
    .description('accept an invitation and join the channel')
    .action(
      action(async ({ host, actor }, ref: string) => {
        const row = await acceptInvitation(host, await actor(), ref);
        await writeOut(`joined #${row.name}\n`);
      }),
    );

  channel
    .command('decline <channel>')
    .description('decline an invitation')
    .action(
      action(async ({ host, actor }, ref: string) => {
        await declineInvitation(host, await actor(), ref);
        await writeOut('declined\n');
      }),
    );

  channel
    .command('history <target>')
    .description('recent messages of #channel or of your DM with a principal, oldest first')
    .option('--json', 'print JSON projections')
    .option('--limit <n>', 'how many (default 20)')
    .action(
      action(async ({ host, actor }, target: string, opts: { json?: boolean; limit?: string }) => {
        const limit = parseLimit(opts.limit, '--limit', 1000, 20);
        const me = await actor();
        const ch = await resolveTarget(host, me, target);
        const rows = (await listChannelHistory(host.store.db, ch.id, { limit })).reverse();
        const projections = await loadProjections(host.store.db, rows);
        if (opts.json) {
          await writeOut(`${JSON.stringify(projections)}\n`);
          return;
        }
        const lines = projections.map((p) => `${p.created_at} ${p.author.name} [${p.message_id}]: ${p.body}`);
        await writeOut(lines.length ? `${lines.join('\n')}\n` : 'no messages\n');
      }),
    );
}
