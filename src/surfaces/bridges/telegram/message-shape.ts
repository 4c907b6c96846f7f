import { z } from 'zod';

/**
 * The fields of an incoming Telegram message the bridge reads, as the Bot API documents them.
 * The bridge trusts its API root for transport, not for shapes: a proxy or a changed API may hand
 * out a number where a string belongs, and the handler must not throw on it (a throw is tried
 * again and again, then reported to the person as a program error).
 */
const fileRef = z.object({
  file_id: z.string(),
  file_size: z.number().optional(),
  file_name: z.string().optional(),
});

const incomingMessage = z.object({
  text: z.string().optional(),
  caption: z.string().optional(),
  photo: z.array(fileRef).optional(),
  document: fileRef.optional(),
  voice: fileRef.optional(),
  audio: fileRef.optional(),
});

/**
 * The first field of `message` that is not what Telegram documents (for the log line), or
 * undefined when every field the bridge reads has its documented type.
 */
export function malformedField(message: unknown): string | undefined {
  const parsed = incomingMessage.safeParse(message);
  if (parsed.success) return undefined;
  const path = parsed.error.issues[0]?.path ?? [];
  return path.length > 0 ? path.map(String).join('.') : 'message';
}

/** What a paired person is told about a message the bridge could not read. */
export const UNREADABLE = 'That message could not be read, so it did not reach your agent.';
