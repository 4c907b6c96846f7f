// Long texts come in parts: `queue.read` for a card, `message.read` for a timeline message. Both
// reply `{status:"body", part:{offset,text}, nextCursor}` until `nextCursor` is null; offsets count
// UTF-16 units of the stored body, so joined parts are the exact text.

import type { MessageReadReply, QueueReadReply } from './wire.js';

export type CallFn = <T>(method: string, params: unknown) => Promise<T>;

type PartReply = QueueReadReply | MessageReadReply;

export type WholeText =
  | { status: 'body'; text: string; bodyBytes: number; parts: number }
  | { status: 'gone' | 'handed-off' | 'state-changed'; parts: number };

/**
 * Reads every part in order and joins them. A part whose offset is not where the previous one
 * ended means the text changed under us; that is reported as `state-changed`, never stitched.
 */
export async function readAllParts(
  readPart: (cursor: string | null) => Promise<PartReply>,
  onProgress?: (receivedUnits: number, parts: number) => void,
): Promise<WholeText> {
  const chunks: string[] = [];
  let received = 0;
  let cursor: string | null = null;
  let parts = 0;
  for (;;) {
    const reply = await readPart(cursor);
    if (reply.status !== 'body') return { status: reply.status, parts };
    if (reply.part.offset !== received) return { status: 'state-changed', parts };
    chunks.push(reply.part.text);
    received += reply.part.text.length;
    parts += 1;
    onProgress?.(received, parts);
    if (reply.nextCursor === null)
      return { status: 'body', text: chunks.join(''), bodyBytes: reply.bodyBytes, parts };
    cursor = reply.nextCursor;
  }
}

/** The full text of an agent's queue card. */
export function readWholeCard(
  call: CallFn,
  agent: string,
  messageId: string,
  onProgress?: (receivedUnits: number, parts: number) => void,
): Promise<WholeText> {
  return readAllParts(
    (cursor) =>
      call<QueueReadReply>(
        'queue.read',
        cursor === null ? { agent, messageId } : { agent, messageId, cursor },
      ),
    onProgress,
  );
}

/** The full text of a channel message whose history row was a preview. */
export function readWholeMessage(call: CallFn, messageId: string): Promise<WholeText> {
  return readAllParts((cursor) =>
    call<MessageReadReply>('message.read', cursor === null ? { messageId } : { messageId, cursor }),
  );
}
