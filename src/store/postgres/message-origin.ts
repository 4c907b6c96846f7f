/**
 * Migration 020: a message records how it came in when its author did not send it directly
 * (`messages.origin`: `telegram` for a person's message the Telegram bridge relayed; null
 * otherwise), so a model reading it is told (docs/security.md, "Provenance"). `sluice_send` and
 * `sluice_send_many` take it as their last argument; they are otherwise those of migrations 013
 * and 011. The 11-argument forms stay, as wrappers that store no origin, so a host still running
 * the build before this one keeps sending during a rolling upgrade.
 */
/** The migration's statements, given the write lock's class (migrations.ts). */
export const messageOrigin = (WRITE_LOCK_CLASS: number): string[] => [
  `alter table messages add column origin text`,
  `create function sluice_send(p_id text, p_channel_id text, p_author_id text, p_created_at text,
     p_body text, p_body_bytes integer, p_subject text, p_reply_to text, p_actions text, p_attachments text,
     p_source text, p_origin text)
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
       attachments, origin, revision, edited_at, deleted_at)
     select p_id, p_channel_id, p_author_id, p_created_at, p_body, p_body_bytes, p_subject, p_reply_to, p_actions,
       p_attachments, p_origin, 1, null, null
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
  `create function sluice_send_many(p_id text[], p_channel_id text[], p_author_id text[], p_created_at text[],
     p_body text[], p_body_bytes integer[], p_subject text[], p_reply_to text[], p_actions text[],
     p_attachments text[], p_source text[], p_origin text[])
   returns table (seq bigint, error_code text, error_message text) language plpgsql as $$
   begin
     perform pg_advisory_xact_lock_shared(${WRITE_LOCK_CLASS}, hashtext(current_schema()));
     perform 1 from queues q
       where q.agent_id in (select m.principal_id from memberships m
         where m.channel_id = any(p_channel_id) and m.left_at is null)
       order by q.agent_id for update of q;
     for i in 1 .. coalesce(array_length(p_id, 1), 0) loop
       error_code := null;
       error_message := null;
       begin
         seq := sluice_send(p_id[i], p_channel_id[i], p_author_id[i], p_created_at[i], p_body[i], p_body_bytes[i],
           p_subject[i], p_reply_to[i], p_actions[i], p_attachments[i], p_source[i], p_origin[i]);
       exception when others then
         if sqlstate in ('40001', '40P01') then raise; end if;
         seq := null;
         get stacked diagnostics error_code = returned_sqlstate, error_message = message_text;
       end;
       return next;
     end loop;
   end $$`,
  // The earlier forms, for a host of the previous build: the same send with no origin.
  `create or replace function sluice_send(p_id text, p_channel_id text, p_author_id text, p_created_at text,
     p_body text, p_body_bytes integer, p_subject text, p_reply_to text, p_actions text, p_attachments text,
     p_source text)
   returns bigint language sql as $$
     select sluice_send(p_id, p_channel_id, p_author_id, p_created_at, p_body, p_body_bytes, p_subject,
       p_reply_to, p_actions, p_attachments, p_source, null::text)
   $$`,
  `create or replace function sluice_send_many(p_id text[], p_channel_id text[], p_author_id text[],
     p_created_at text[], p_body text[], p_body_bytes integer[], p_subject text[], p_reply_to text[],
     p_actions text[], p_attachments text[], p_source text[])
   returns table (seq bigint, error_code text, error_message text) language sql as $$
     select * from sluice_send_many(p_id, p_channel_id, p_author_id, p_created_at, p_body, p_body_bytes,
       p_subject, p_reply_to, p_actions, p_attachments, p_source,
       array_fill(null::text, array[coalesce(array_length(p_id, 1), 0)]))
   $$`,
];
