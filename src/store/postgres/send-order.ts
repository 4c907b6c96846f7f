/**
 * Migration 013: an agent's inbox order is the channel's history order (seq), also for sends in
 * flight at the same time (docs/postgres.md, "Order"). `sluice_send` used to take the message's
 * seq first and its recipients' queue rows second, so of two concurrent sends sharing a
 * recipient, the one with the lower seq could take the later position. Now it locks the
 * recipients' queue rows first (in agent order, as before, so sends cannot deadlock) and takes the
 * seq while holding them: a send that shares a recipient with another one waits for that one's
 * commit before it takes its seq, so seq and positions follow one order. `sluice_send_many`
 * already locks every queue row of its batch first and sends in array order. The rest of the
 * function is unchanged (migration 008).
 */
/** The migration's statements, given the write lock's class (migrations.ts). */
export const inboxInHistoryOrder = (WRITE_LOCK_CLASS: number): string[] => [
  `create or replace function sluice_send(p_id text, p_channel_id text, p_author_id text, p_created_at text,
     p_body text, p_body_bytes integer, p_subject text, p_reply_to text, p_actions text, p_attachments text,
     p_source text)
   returns bigint language plpgsql as $$
   declare v_seq bigint;
   begin
     perform pg_advisory_xact_lock_shared(${WRITE_LOCK_CLASS}, hashtext(current_schema()));
     perform 1 from queues q
       join memberships m on m.principal_id = q.agent_id and m.channel_id = p_channel_id and m.left_at is null
       join principals p on p.id = q.agent_id and p.kind = 'agent'
       where q.agent_id <> p_author_id
       order by q.agent_id for update of q;
     insert into messages (id, channel_id, author_id, created_at, body, body_bytes, subject, reply_to, actions,
       attachments, revision, edited_at, deleted_at)
     select p_id, p_channel_id, p_author_id, p_created_at, p_body, p_body_bytes, p_subject, p_reply_to, p_actions,
       p_attachments, 1, null, null
     where exists (select 1 from memberships
       where channel_id = p_channel_id and principal_id = p_author_id and left_at is null)
     returning seq into v_seq;
     if v_seq is null then return null; end if;
     with recipients as (
       select q.agent_id from queues q
       join memberships m on m.principal_id = q.agent_id and m.channel_id = p_channel_id and m.left_at is null
       join principals p on p.id = q.agent_id and p.kind = 'agent'
       where q.agent_id <> p_author_id
       order by q.agent_id for update of q
     ), taken as (
       update queues q set next_position = q.next_position + 1, waiting = q.waiting + 1, revision = q.revision + 1,
         pending_person = q.pending_person + (p_source = 'person')::int,
         pending_agent = q.pending_agent + (p_source = 'agent')::int,
         pending_unknown = q.pending_unknown + (p_source = 'unknown')::int
       from recipients r where q.agent_id = r.agent_id
       returning q.agent_id, q.next_position - 1 as position
     ), entries as (
       insert into inbox (agent_id, position, message_seq, message_id, channel_id, state, source, body_bytes,
         created_at, updated_at, returned_reason, failure_kind)
       select t.agent_id, t.position, v_seq, p_id, p_channel_id, 'waiting', p_source, p_body_bytes,
         p_created_at, p_created_at, null, null from taken t
       returning agent_id
     )
     insert into events (kind, agent_id, channel_id, message_id, created_at)
     select 'queue.changed', e.agent_id, null, p_id, p_created_at from entries e
     union all select 'message.created', null, p_channel_id, p_id, p_created_at;
     return v_seq;
   end $$`,
];
