import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { HostContext, Principal } from '../../host/identity/index.js';
import { withOneLineErrors } from './one-line-errors.js';
import { ConfirmingTransport, ReceiptLedger } from './receipts.js';
import { buildMcpServer } from './tools.js';
import { Utf8LineGuard } from './utf8-lines.js';

/**
 * The SDK's stdio transport, except that `send` resolves only once stdout has taken the whole
 * message (the write's callback), and rejects if the write failed: a tool result counts as
 * received only then (DESIGN.md I9).
 */
export class WrittenStdioTransport extends StdioServerTransport {
  readonly #out: Writable;

  constructor(stdin: Readable = process.stdin, stdout: Writable = process.stdout) {
    super(stdin, stdout);
    this.#out = stdout;
  }

  override send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#out.write(serializeMessage(message), (err) => (err ? reject(err) : resolve()));
    });
  }
}

/**
 * Serves the agent's tools over stdio until the client closes stdin (or the process is told to
 * stop). Nothing else may write to stdout: it carries the protocol.
 */
export async function serveStdio(ctx: HostContext, agent: Principal): Promise<void> {
  const onInternalError = (err: unknown) =>
    process.stderr.write(
      `sluice mcp: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
  const receipts = new ReceiptLedger(ctx, onInternalError);
  const server = buildMcpServer(ctx, agent, { onInternalError, receipts });
  // Lines that are not UTF-8 are answered with a parse error here, never decoded with U+FFFD.
  const stdin = process.stdin.pipe(new Utf8LineGuard((reply) => process.stdout.write(reply)));
  const transport = new ConfirmingTransport(new WrittenStdioTransport(stdin, process.stdout), receipts);
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
  });
  await server.connect(withOneLineErrors(transport));
  const stop = () => void server.close();
  process.stdin.once('end', stop);
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  try {
    await closed;
  } finally {
    process.stdin.off('end', stop);
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
  }
}
