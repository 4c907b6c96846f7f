// Opening a card reads its exact stored body in parts (`queue.read` with `nextCursor`) and joins them.

import type { QueueReadReply } from '../wire.js';

export type CallFn = <T>(method: string, params: unknown) => Promise<T>;

export type CardText =
  | { status: 'body'; text: string; bodyBytes: number; parts: number }
  | { status: 'gone' | 'handed-off' | 'state-changed'; parts: number };

/**
 * Reads every part of a card in order and returns the joined text. A part whose offset is not where
 * the previous one ended means the body changed under us, which is reported rather than stitched.
 */
export async function readWholeCard(
  call: CallFn,
  agent: string,
  messageId: string,
  onProgress?: (receivedUnits: number, parts: number) => void,
): Promise<CardText> {
  const chunks: string[] = [];
  let received = 0;
  let cursor: string | null = null;
  let parts = 0;
  for (;;) {
    const params: { agent: string; messageId: string; cursor?: string } = { agent, messageId };
    if (cursor !== null) params.cursor = cursor;
    const reply: QueueReadReply = await call<QueueReadReply>('queue.read', params);
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
