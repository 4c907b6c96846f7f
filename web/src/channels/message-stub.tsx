import { formatBytes } from '../media.js';
import type { RpcClient } from '../rpc.js';
import type { LiveMessageStub } from '../wire.js';
import { MessageBody } from './message-body.js';
import { useWholeMessage } from './whole-message.js';

/**
 * A message the host pushed as a stub: its record, even compact, was over the connection's reply
 * budget, so there is no author or text to show. Says so, and reads the text with `message.read`
 * (in parts, each within the budget) when asked.
 */
export function MessageStubItem({ client, stub }: { client: RpcClient; stub: LiveMessageStub }) {
  const { whole, reading, error, read } = useWholeMessage(client, stub.messageId);
  return (
    <article class="message stub" data-message-id={stub.messageId} tabIndex={-1}>
      <p class="muted small">This message is too large to show here.</p>
      {whole !== null ? (
        whole && <MessageBody body={whole} bytes={stub.bodyBytes} />
      ) : (
        <button type="button" class="button ghost" onClick={read} disabled={reading}>
          {reading ? 'Reading…' : `Show its text (${formatBytes(stub.bodyBytes)})`}
        </button>
      )}
      {error && <p class="error">{error}</p>}
    </article>
  );
}
