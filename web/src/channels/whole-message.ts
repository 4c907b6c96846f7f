import { useState } from 'preact/hooks';
import { readWholeMessage } from '../read-parts.js';
import { describeError, type RpcClient } from '../rpc.js';

/** A message's whole text, read in parts with `message.read` when the reader asks for it. */
export interface WholeMessage {
  /** The text once read; null before (or when it could not be). */
  whole: string | null;
  reading: boolean;
  error: string | null;
  read: () => void;
}

/** Reads a message's body on demand: for a preview row, and for a stub that has none. */
export function useWholeMessage(client: RpcClient, messageId: string): WholeMessage {
  const [whole, setWhole] = useState<string | null>(null);
  const [reading, setReading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const read = () => {
    setReading(true);
    setError(null);
    readWholeMessage((method, params) => client.call(method, params), messageId)
      .then((text) =>
        text.status === 'body' ? setWhole(text.text) : setError('the message changed; reload to see it'),
      )
      .catch((err) => setError(describeError(err)))
      .finally(() => setReading(false));
  };
  return { whole, reading, error, read };
}
