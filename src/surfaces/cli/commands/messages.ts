import { basename } from 'node:path';
import type { Command } from 'commander';
import { senderLabel } from '../../../core/envelope.js';
import { SluiceError } from '../../../core/errors.js';
import type { HostContext, Principal } from '../../../host/identity/index.js';
import { forgetUploads, putMedia } from '../../../host/media/index.js';
import {
  handleMessages,
  handleReplyKey,
  messagePlace,
  parseHandleLines,
  provenanceOf,
  readProjection,
  relationsFor,
  replyToMessage,
  senderLabelOf,
  sendMessage,
} from '../../../host/messages/index.js';
import { archiveMessages, listInbox } from '../../../host/queue/index.js';
import { type AgentLock, readAttachment } from '../agent-lock.js';
import { boundedMessagePart } from '../bounded-read.js';
import { action } from '../context.js';
import { parseLimit, readStdinText, writeOut } from '../io.js';
import { writeList } from '../list-output.js';
import {
  boundedTextListing,
  continueCommands,
  listingRow,
  MAX_BYTES_HELP,
  MAX_CHARS_HELP,
  partOffset,
  readBudget,
  resumeOffset,
  resumePoint,
} from '../message-listing.js';
import { boundedMessagePage } from '../message-page.js';
import { firstLine, quotedBody, terminalBody, terminalLine } from '../message-text.js';
import { registerMessageStatus } from './message-status.js';

const collect = (value: string, previous: string[]) => [...previous, value];

const IDEMPOTENCY_HELP =
  'retry safely: the same key (1-200 printable characters) prints the first id and sends nothing again';

/** `-m TEXT`, or `-m -` to read the body from stdin. */
async function bodyFrom(host: HostContext, message: string | undefined): Promise<string> {
  if (message === undefined)
    throw new SluiceError('invalid_params', 'a body is required: -m TEXT or -m - for stdin');
  if (message === '-') return readStdinText(host.limits.maxBodyBytes + 4);
  return message;
}

/**
 * Uploads `files`, then runs `send` with their ids. If an upload or the send is refused, the
 * uploads made for it are forgotten (forgetUploads) before the error goes on: a refused send
 * keeps no attachable upload.
 */
async function withUploads<T>(
  host: HostContext,
  actor: Principal,
  files: readonly string[],
  lock: AgentLock | undefined,
  send: (attachmentIds: string[]) => Promise<T>,
): Promise<T> {
  const ids: string[] = [];
  try {
    for (const file of files) {
      // Under an agent lock only the folders the user chose are readable (DESIGN.md §8 I8).
      const bytes = await readAttachment(lock, file, host.limits.maxUploadBytes);
      ids.push((await putMedia(host, actor, new Uint8Array(bytes), basename(file))).attachment_id);
    }
    return await send(ids);
  } catch (err) {
    // The refusal is what the caller needs to see; a cleanup that fails leaves rows media gc can
    // still reclaim, so its own error never replaces that one.
    await forgetUploads(host, actor, ids).catch(() => undefined);
    throw err;
  }
}

export function registerMessageCommands(program: Command): void {
  const message = program.command('message').description('send, list, read, reply to and archive messages');
  registerMessageStatus(message);

  message
    .command('send <target>')
    .description('send to #channel or a principal (their DM); prints the new id')
    .option('-m, --message <text>', 'the body, or - to read it from stdin')
    .option('--subject <subject>', 'a subject line')
    .option('--reply-to <id>', 'the message this replies to')
    .option('--attach <file>', 'attach a file (repeatable)', collect, [])
    .option('--idempotency-key <key>', IDEMPOTENCY_HELP)
    .action(
      action(
        async (
          { host, actor, lock },
          target: string,
          opts: {
            message?: string;
            subject?: string;
            replyTo?: string;
            attach: string[];
            idempotencyKey?: string;
          },
        ) => {
          const me = await actor();
          const body =
            opts.attach.length > 0 && opts.message === undefined ? '' : await bodyFrom(host, opts.message);
          const sent = await withUploads(host, me, opts.attach, lock, (attachmentIds) =>
            sendMessage(host, me, {
              to: target,
              body,
              subject: opts.subject,
              replyTo: opts.replyTo,
              attachmentIds,
              idempotencyKey: opts.idempotencyKey,
            }),
          );
          await writeOut(`${sent.message_id}\n`);
        },
      ),
    );

  message
    .command('ls')
    .description('your pending messages, oldest first (FIFO)')
    .option('--json', 'print JSON rows')
    .option('--include-body', 'include complete bodies')
    .option('--archive', 'list archived and handled messages instead')
    .option('--since <id>', 'only messages after this one')
    .option(
      '--resume <id>',
      "with --json --include-body: start with this message's body from --offset (from a page's next)",
    )
    .option('--offset <n>', 'with --resume: the UTF-16 offset in its body where the page starts')
    .option('--body-sha <hex>', 'with --offset: the version of the body its part came from (from next)')
    .option('--from <name>', 'only messages from this principal')
    .option('--limit <n>', 'how many (default 100)')
    .option('--max-chars <n>', `with --include-body: ${MAX_CHARS_HELP}`)
    .option('--max-bytes <n>', `with --include-body: ${MAX_BYTES_HELP}`)
    .action(
      action(
        async (
          { host, actor, typed },
          opts: {
            json?: boolean;
            includeBody?: boolean;
            archive?: boolean;
            since?: string;
            resume?: string;
            offset?: string;
            bodySha?: string;
            from?: string;
            limit?: string;
            maxChars?: string;
            maxBytes?: string;
          },
        ) => {
          const limit = parseLimit(opts.limit, '--limit', 10_000, 100);
          const resume = resumePoint(opts);
          const budget = readBudget(opts);
          const me = await actor();
          const relationOf = await relationsFor(host, me);
          // One more than shown tells whether the listing continues.
          const fetched = await listInbox(host, me, {
            archive: opts.archive === true,
            sinceId: opts.since,
            startId: resume?.id,
            fromName: opts.from,
            limit: Math.min(limit + 1, 10_000),
          });
          const hasMore = fetched.length > limit;
          const rows = hasMore ? fetched.slice(0, limit) : fetched;
          if (opts.json && opts.includeBody) {
            // A model's read: complete bodies, within its tool-output cap, with the command that continues.
            const commands = continueCommands(opts, typed);
            const startOffset = resumeOffset(resume, rows[0]?.projection, commands);
            const rowsShown = rows.map((r) => listingRow(r, true, relationOf));
            const page = boundedMessagePage(rowsShown, hasMore, budget, commands, startOffset);
            await writeOut(page.text);
            return;
          }
          if (opts.json) {
            await writeOut(`${JSON.stringify(rows.map((r) => listingRow(r, false, relationOf)))}\n`);
            return;
          }
          if (!opts.includeBody) {
            // A person's view: the list style every `ls` shares.
            await writeList(rows, {
              empty: opts.archive ? 'no archived messages' : 'no pending messages',
              columns: [
                { header: 'ID', cell: (r) => r.projection.message_id },
                { header: 'CHANNEL', cell: (r) => r.channelName },
                {
                  header: 'FROM',
                  cell: (r) => senderLabelOf(r.projection, relationOf),
                },
                { header: 'CREATED', cell: (r) => r.projection.created_at },
                { header: 'STATE', cell: (r) => r.entry.state },
                { header: 'SUBJECT', cell: (r) => firstLine(r.projection.subject ?? r.projection.body) },
              ],
            });
            return;
          }
          if (rows.length === 0) {
            await writeOut(opts.archive ? 'no archived messages\n' : 'no pending messages\n');
            return;
          }
          const out = rows.map((r) => {
            const p = r.projection;
            const from = senderLabelOf(p, relationOf);
            const head = `${p.message_id}  ${r.channelName}  ${from}  ${p.created_at}  ${r.entry.state}  ${firstLine(p.subject ?? p.body)}`;
            return `${head}\n${quotedBody(p.body)}\n`;
          });
          await writeOut(boundedTextListing(rows, out, hasMore, budget, continueCommands(opts, typed)));
        },
      ),
    );

  message
    .command('read <id>')
    .description('print one message whole (--json: within --max-chars, a large body in parts)')
    .option('--json', 'print the message as `message ls --json` rows do, with `next`')
    .option('--max-chars <n>', `with --json: ${MAX_CHARS_HELP}`)
    .option('--max-bytes <n>', `with --json: ${MAX_BYTES_HELP}`)
    .option('--offset <n>', 'with --json: the part of the body from this UTF-16 offset (from `next`)')
    .option('--body-sha <hex>', 'with --offset: the version of the body its part came from (from next)')
    .action(
      action(
        async (
          { host, actor, typed },
          id: string,
          opts: { json?: boolean; maxChars?: string; maxBytes?: string; offset?: string; bodySha?: string },
        ) => {
          const me = await actor();
          const p = await readProjection(host, me, id);
          const { channelName, state } = await messagePlace(host, me, p);
          const provenance = provenanceOf(p, await relationsFor(host, me));
          if (opts.json) {
            const budget = readBudget(opts);
            const offset = partOffset(opts, p, continueCommands(opts, typed));
            const row = {
              id: p.message_id,
              channel: channelName,
              from: p.author.name,
              ...provenance,
              createdAt: p.created_at,
              subject: p.subject ?? null,
              replyTo: p.reply_to?.message_id ?? null,
              state,
              attachments: p.attachments,
              body: p.body,
            };
            await writeOut(boundedMessagePart(row, offset, budget, continueCommands(opts, typed)));
            return;
          }
          // Every header is one line whatever the sender wrote (a subject cannot forge `From:`).
          const headers = [
            `From: ${senderLabel(p.author.name, provenance.sender, provenance.via)}`,
            `Channel: ${channelName}`,
            `Date: ${p.created_at}`,
            `Id: ${p.message_id}`,
            ...(p.subject !== undefined ? [`Subject: ${p.subject}`] : []),
            ...(p.reply_to ? [`Reply-To: ${p.reply_to.message_id} (${p.reply_to.author})`] : []),
            ...p.attachments.map(
              (a) => `Attachment: ${a.name} (${a.mime}, ${a.size} bytes, ${a.attachment_id})`,
            ),
          ].map(terminalLine);
          await writeOut(`${headers.join('\n')}\n\n${terminalBody(p.body)}\n`);
        },
      ),
    );

  message
    .command('reply <id>')
    .description("reply in the message's channel; prints the new id")
    .option('-m, --message <text>', 'the body, or - to read it from stdin')
    .option('--subject <subject>', 'a subject line')
    .option('--attach <file>', 'attach a file (repeatable)', collect, [])
    .option('--idempotency-key <key>', IDEMPOTENCY_HELP)
    .option('--archive', 'then archive the message: one process; a repeat changes nothing')
    .option('--json', 'with --archive, print the receipt {id, reply, archived, archivedAt, already}')
    .action(
      action(
        async (
          { host, actor, lock },
          id: string,
          opts: {
            message?: string;
            subject?: string;
            attach: string[];
            idempotencyKey?: string;
            archive?: boolean;
            json?: boolean;
          },
        ) => {
          const me = await actor();
          const body =
            opts.attach.length > 0 && opts.message === undefined ? '' : await bodyFrom(host, opts.message);
          // With --archive the reply is keyed by (message, content) unless a key is given, so the
          // pair is idempotent: a repeated command returns the first reply and archives nothing again.
          // Uploads get fresh ids each run, so a reply with --attach is keyed only by an explicit key.
          const derivedKey =
            opts.archive && opts.attach.length === 0 ? handleReplyKey(id, body, opts.subject) : undefined;
          const sent = await withUploads(host, me, opts.attach, lock, (attachmentIds) =>
            replyToMessage(host, me, id, {
              body,
              subject: opts.subject,
              attachmentIds,
              idempotencyKey: opts.idempotencyKey ?? derivedKey,
            }),
          );
          if (!opts.archive) {
            await writeOut(`${sent.message_id}\n`);
            return;
          }
          const [receipt] = await archiveMessages(host, me, [id]);
          if (!receipt) throw new SluiceError('internal', 'archive returned no receipt');
          if (opts.json) {
            await writeOut(
              `${JSON.stringify({ id, reply: sent.message_id, archived: true, archivedAt: receipt.archivedAt, already: receipt.already })}\n`,
            );
            return;
          }
          await writeOut(
            `${sent.message_id}\n${id} ${receipt.already ? 'already archived' : 'archived'} ${receipt.archivedAt}\n`,
          );
        },
      ),
    );

  message
    .command('handle')
    .description(
      'reply to and archive many messages in one process: JSON lines {"id","body","archive"} on stdin; prints one receipt per line',
    )
    .action(
      action(async ({ host, actor }) => {
        const me = await actor();
        // Each body is capped; the whole input may hold many of them.
        const text = await readStdinText(host.limits.maxBodyBytes * 4 + 1_000_000, 'stdin');
        const items = parseHandleLines(text, host.limits.maxBodyBytes);
        const receipts = await handleMessages(host, me, items);
        await writeOut(receipts.map((r) => `${JSON.stringify(r)}\n`).join(''));
      }),
    );

  message
    .command('archive <ids...>')
    .description('archive exact ids from your inbox (idempotent receipts)')
    .option('--json', 'print [{id, archivedAt, already}]')
    .action(
      action(async ({ host, actor }, ids: string[], opts: { json?: boolean }) => {
        const receipts = await archiveMessages(host, await actor(), ids);
        if (opts.json) {
          await writeOut(`${JSON.stringify(receipts)}\n`);
          return;
        }
        await writeOut(
          `${receipts.map((r) => `${r.id} ${r.already ? 'already archived' : 'archived'} ${r.archivedAt}`).join('\n')}\n`,
        );
      }),
    );
}
