import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { HostContext } from '../../host/context.js';
import type { Principal } from '../../host/principals.js';
import { buildMcpServer } from './tools.js';

/**
 * Serves the agent's tools over stdio until the client closes stdin (or the process is told to
 * stop). Nothing else may write to stdout: it carries the protocol.
 */
export async function serveStdio(ctx: HostContext, agent: Principal): Promise<void> {
  const server = buildMcpServer(ctx, agent, {
    onInternalError: (err) =>
      process.stderr.write(
        `sluice mcp: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      ),
  });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
  });
  await server.connect(transport);
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
