import { z } from 'zod';
import { SluiceError } from '../../core/errors.js';
import { quoteInput } from '../../core/text.js';

// Strings a device sends are bounded so a hostile frame costs a bounded amount of work; bodies
// are bounded by the host's maxBodyBytes (checked by the host) and the 4 MiB frame cap.
const id = z.string().min(1).max(4096);
const name = z.string().min(1).max(256);
const size = z.number().int();
const source = z.enum(['person', 'agent', 'unknown']);

/** Strict params for every method: an unknown field is an error that names it. */
export const PARAMS = {
  'host.hello': z.strictObject({
    client: z.string().max(256).optional(),
    protocol: z.string().max(64).optional(),
  }),
  'queue.summary': z.strictObject({ agent: name }),
  'queue.page': z.strictObject({
    agent: name,
    source: source.optional(),
    cursor: z.string().max(16384).optional(),
    around: id.optional(),
    size: size.optional(),
  }),
  'queue.read': z.strictObject({ agent: name, messageId: id, cursor: z.string().max(16384).optional() }),
  'queue.pause': z.strictObject({ agent: name, reason: z.string().max(500).optional() }),
  'queue.resume': z.strictObject({ agent: name, messageId: id.optional() }),
  'queue.withdraw': z.strictObject({ agent: name, messageId: id }),
  'queue.edit': z.strictObject({ agent: name, messageId: id, body: z.string() }),
  'channel.list': z.strictObject({
    cursor: z.string().max(16384).optional(),
    limit: size.optional(),
    // "name" (the default, as before) or "activity": most recent first, with filter and channelId.
    order: z.enum(['name', 'activity']).optional(),
    filter: z.string().max(256).optional(),
    channelId: id.optional(),
  }),
  'principal.list': z.strictObject({
    after: name.optional(),
    limit: size.optional(),
    managed: z.boolean().optional(),
  }),
  'principal.addAgent': z.strictObject({ name, settlement: z.enum(['explicit', 'turn']).optional() }),
  'agent.status': z.strictObject({ agent: name }),
  'agent.start': z.strictObject({ agent: name }),
  'agent.stop': z.strictObject({ agent: name }),
  'agent.restart': z.strictObject({ agent: name }),
  'agent.connect': z.strictObject({ agent: name }),
  'channel.create': z.strictObject({ name, members: z.array(name).max(256) }),
  'channel.addMember': z.strictObject({ channelId: id, member: name }),
  'channel.removeMember': z.strictObject({ channelId: id, member: name }),
  'channel.leave': z.strictObject({ channel_id: id }),
  'channel.invitations': z.strictObject({
    cursor: z.string().max(16384).optional(),
    limit: size.optional(),
  }),
  'channel.members': z.strictObject({
    channelId: id,
    cursor: z.string().max(16384).optional(),
    limit: size.optional(),
  }),
  'channel.accept': z.strictObject({ channel_id: id }),
  'channel.decline': z.strictObject({ channel_id: id }),
  'channel.block': z.strictObject({ name }),
  'channel.unblock': z.strictObject({ name }),
  'channel.blocked': z.strictObject({}),
  'channel.history': z.strictObject({
    channelId: id,
    cursor: z.string().max(16384).optional(),
    size: size.optional(),
  }),
  'message.send': z.strictObject({
    to: id,
    body: z.string(),
    subject: z.string().max(4096).optional(),
    reply_to: id.optional(),
    attachments: z.array(id).max(32).optional(),
    // Checked by the host (1-200 printable characters); bounded here like every string.
    idempotency_key: z.string().max(4096).optional(),
  }),
  'message.edit': z.strictObject({
    messageId: id,
    body: z.string(),
    subject: z.string().max(4096).nullable().optional(),
  }),
  'message.read': z.strictObject({ messageId: id, cursor: z.string().max(16384).optional() }),
  'message.markRead': z.strictObject({ messageId: id }),
  'message.status': z.strictObject({ message_id: id }),
  'approval.list': z.strictObject({ agent: name.optional(), status: z.enum(['pending', 'all']).optional() }),
  'approval.decide': z.strictObject({
    id,
    decision: z.enum(['allow', 'deny']),
    // The host caps a note at 2,000 characters; bounded here like every string.
    note: z.string().max(8192).optional(),
    always: z.boolean().optional(),
  }),
  'approval.rules': z.strictObject({ agent: name }),
  'approval.rule.revoke': z.strictObject({ id }),
  subscribe: z.strictObject({
    queues: z.array(name).max(64).optional(),
    channels: z.array(id).max(256).optional(),
    channelList: z.boolean().optional(),
  }),
  unsubscribe: z.strictObject({
    queues: z.array(name).max(64).optional(),
    channels: z.array(id).max(256).optional(),
    channelList: z.boolean().optional(),
  }),
} as const;

export type MethodName = keyof typeof PARAMS;

export type ParamsOf<M extends MethodName> = z.infer<(typeof PARAMS)[M]>;

export function isMethodName(method: string): method is MethodName {
  return Object.hasOwn(PARAMS, method);
}

/**
 * Parses params strictly. Absent params count as `{}`; anything but an object, an unknown field
 * or a bad value is `invalid_params` with one line naming the field.
 */
export function parseParams<M extends MethodName>(method: M, params: unknown): ParamsOf<M> {
  const given = params === undefined ? {} : params;
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    throw new SluiceError('invalid_params', 'params must be an object');
  }
  const parsed = PARAMS[method].safeParse(given);
  if (parsed.success) return parsed.data as ParamsOf<M>;
  const issue = parsed.error.issues[0];
  if (issue?.code === 'unrecognized_keys') {
    const field = String(issue.keys[0] ?? '');
    throw new SluiceError('invalid_params', `unknown field ${quoteInput(field)} in ${method} params`, {
      field: field.slice(0, 256),
    });
  }
  const field = issue?.path.map(String).join('.') ?? '';
  throw new SluiceError(
    'invalid_params',
    `invalid ${field === '' ? 'params' : `field ${quoteInput(field)}`} in ${method}: ${issue?.message ?? 'invalid'}`,
    { field: field.slice(0, 256) },
  );
}
