import type { Command } from 'commander';
import { resolveAgent } from '../../../host/identity/index.js';
import { serveStdio } from '../../mcp/stdio.js';
import { action } from '../context.js';

/** `sluice mcp --as AGENT`: the agent's MCP tools over stdio (DESIGN.md §3.1, §4). */
export function registerMcpCommands(program: Command): void {
  program
    .command('mcp')
    .description('serve the MCP tools (channel_read, message_reply, …) for --as AGENT over stdio')
    .action(
      action(async ({ host, actorName }) => {
        const agent = await resolveAgent(host, actorName);
        await serveStdio(host, agent);
      }),
    );
}
