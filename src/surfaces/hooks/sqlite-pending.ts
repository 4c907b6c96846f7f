// The hook runs before every prompt, so it reads the agent's pending slice straight from the
// SQLite file with one read-only connection: loading Kysely and running the migrator would cost
// more than the rest of the hook. It mirrors host/queue/delivery.ts deliveryFor (a test compares the
// two on the same store) and only runs against the schema it was written for.
import BetterSqlite3 from 'better-sqlite3';
import type { DeliveryAttachment, DeliveryCandidate } from '../../core/envelope.js';
import { SluiceError } from '../../core/errors.js';
import { PENDING_SQL_LIST, readableEntrySql } from '../../core/pending.js';
import { originOf, senderRelation } from '../../core/provenance.js';
import { quoteInput } from '../../core/text.js';

/** The migrations whose schema this reader knows; any other store goes through the host. */
export const KNOWN_MIGRATIONS: readonly string[] = [
  '001_initial',
  // None of these changes a table the reader queries (test/hooks/sqlite-pending.test.ts keeps the
  // list equal to the store's, so a new migration is a decision, not a silent slow path).
  '002_idempotency',
  '003_sessions_tokens',
  '004_invitations',
  '005_telegram',
  '006_read_receipts',
  '007_dispatch_attempts',
  '008_commit_order',
  // An index on turns only (the page's presence read).
  '009_turns_by_start',
  // A new table (agent managers): the reader only looks up who manages the agent (provenance).
  '010_agent_managers',
  // Nothing on SQLite (a PostgreSQL server function).
  '011_send_batches',
  // A new table (agent run specs) the reader never queries.
  '012_agent_runs',
  // Nothing on SQLite (PostgreSQL's sends lock their recipients' queues before their seq).
  '013_inbox_in_history_order',
  // A column on tokens (their note), a table the reader never queries.
  '014_token_notes',
  // New tables (approvals, their rules and policies) the reader never queries.
  '015_approvals',
  // A new table (invitation blocks) and an index on invitations, neither of which the reader queries.
  '016_invitation_blocks',
  // A column and an index on memberships and a trigger on messages: the reader's membership check
  // reads neither the column nor the index.
  '017_channels_by_activity',
  // A new table (the Telegram bridge's reactions) the reader never queries.
  '018_telegram_reactions',
  // A new table (the Telegram bridge's approval cards) the reader never queries.
  '019_telegram_approvals',
  // A column on messages (how one came in), which the reader selects and shows as `via`.
  '020_message_origin',
  // An index (inbox_pending) that the reader's pending walk uses: its condition is written the same.
  '021_inbox_pending',
  // An index on messages (replies) the reader never uses.
  '022_messages_by_reply',
  // A column on agent_runs, a table the reader never reads.
  '023_agent_run_model_error',
  // A new table (who drives each agent) the reader never queries.
  '024_agent_drivers',
];

/** An agent's pending messages, oldest first, as the delivery renderer takes them. */
export interface PendingSlice {
  agentName: string;
  totalPending: number;
  candidates: DeliveryCandidate[];
}

type Database = InstanceType<typeof BetterSqlite3>;

interface InboxMessageRow {
  id: string;
  channel_name: string | null;
  channel_id: string;
  author_id: string;
  author_name: string | null;
  author_kind: string | null;
  created_at: string;
  subject: string | null;
  reply_to: string | null;
  body: string;
  attachments: string;
  origin: string | null;
}

/** Opens the store file read-only; `null` when its schema is not the one this reader knows. */
export function openPendingReader(path: string): PendingReader | null {
  let db: Database;
  try {
    db = new BetterSqlite3(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new SluiceError('unavailable', `cannot open the sluice store ${path}: ${(err as Error).message}`);
  }
  try {
    db.pragma('busy_timeout = 2000');
    if (!hasKnownSchema(db)) {
      db.close();
      return null;
    }
    return new PendingReader(db);
  } catch (err) {
    db.close();
    throw new SluiceError('unavailable', `cannot read the sluice store ${path}: ${(err as Error).message}`);
  }
}

function hasKnownSchema(db: Database): boolean {
  const table = db
    .prepare(`select 1 from sqlite_master where type = 'table' and name = 'kysely_migration'`)
    .get();
  if (table === undefined) return false;
  const names = (
    db.prepare('select name from kysely_migration order by name').all() as { name: string }[]
  ).map((r) => r.name);
  return names.length === KNOWN_MIGRATIONS.length && names.every((n, i) => n === KNOWN_MIGRATIONS[i]);
}

/** Read-only queries for one hook call; every read runs in one snapshot. */
export class PendingReader {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /** The agent's first `limit` pending messages (FIFO) and the true pending count. */
  pendingSlice(agentName: string, limit: number): PendingSlice {
    const db = this.#db;
    const read = db.transaction((): PendingSlice => {
      const agent = db.prepare('select id, name, kind from principals where name = ?').get(agentName) as
        | { id: string; name: string; kind: string }
        | undefined;
      if (agent === undefined) {
        throw new SluiceError('not_found', `no principal named ${quoteInput(agentName)}`);
      }
      if (agent.kind !== 'agent') {
        throw new SluiceError(
          'invalid_params',
          `${agent.name} is a person: people have no inbox (use --as AGENT)`,
        );
      }
      // Same rows as listInboxEntries(channelIds = active memberships) + withProjections.
      const rows = db
        .prepare(
          `select m.id, c.name as channel_name, i.channel_id, m.author_id, p.name as author_name,
                  p.kind as author_kind, m.created_at, m.subject,
                  m.reply_to, m.body, m.attachments, m.origin
             from inbox i
             join messages m on m.seq = i.message_seq
             left join channels c on c.id = i.channel_id
             left join principals p on p.id = m.author_id
            where i.agent_id = ? and i.state in (${PENDING_SQL_LIST}) and ${readableEntrySql('i')}
            order by i.position asc
            limit ?`,
        )
        .all(agent.id, limit) as InboxMessageRow[];
      const queue = db.prepare('select waiting, returned from queues where agent_id = ?').get(agent.id) as
        | { waiting: number; returned: number }
        | undefined;
      // What each sender is to this agent (core/provenance.ts), as host/messages/provenance.ts decides it.
      const managers = new Set(
        (
          db.prepare('select person_id from agent_managers where agent_id = ?').all(agent.id) as {
            person_id: string;
          }[]
        ).map((r) => r.person_id),
      );
      const candidates = rows.map((row) => toCandidate(row, agent.id, managers));
      // The counters less the entries of channels the agent left, as store/ops/inbox.ts
      // readablePendingCounts counts them: only an agent that left a channel walks its entries.
      const hasLeft =
        db
          .prepare('select 1 from memberships where principal_id = ? and left_at is not null limit 1')
          .get(agent.id) !== undefined;
      const hidden = hasLeft
        ? (
            db
              .prepare(
                `select count(*) as n from inbox i
                  where i.agent_id = ? and i.state in (${PENDING_SQL_LIST}) and not ${readableEntrySql('i')}`,
              )
              .get(agent.id) as { n: number }
          ).n
        : 0;
      const counted = queue ? queue.waiting + queue.returned - hidden : 0;
      return { agentName: agent.name, totalPending: Math.max(counted, candidates.length), candidates };
    });
    return read();
  }

  close(): void {
    this.#db.close();
  }
}

function toCandidate(
  row: InboxMessageRow,
  agentId: string,
  managers: ReadonlySet<string>,
): DeliveryCandidate {
  const name = row.channel_name ?? row.channel_id;
  const from = row.author_name ?? 'unknown';
  const via = originOf(row.origin);
  return {
    id: row.id,
    channel: name.startsWith('dm:') ? name : `#${name}`,
    from,
    sender: senderRelation(
      { id: row.author_id, name: from, kind: row.author_kind ?? 'unknown' },
      agentId,
      managers,
    ),
    ...(via === undefined ? {} : { via }),
    createdAt: row.created_at,
    subject: row.subject,
    replyTo: row.reply_to,
    body: row.body,
    attachments: parseAttachments(row.attachments),
  };
}

function parseAttachments(text: string): DeliveryAttachment[] {
  try {
    const value = JSON.parse(text);
    return Array.isArray(value) ? (value as DeliveryAttachment[]) : [];
  } catch {
    return [];
  }
}
