import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Principal } from '../../host/identity/index.js';
import { withOneLineErrors } from '../mcp/one-line-errors.js';
import { RequestRouterTransport } from '../mcp/request-router.js';
import type { ReceiptHolder } from '../mcp/tools.js';

/** One agent's tool server and the transport that routes requests to it. */
export interface AgentToolServer {
  server: McpServer;
  router: RequestRouterTransport;
}

interface Entry extends AgentToolServer {
  /** The principal row the server was built for: a changed row gets a new server. */
  fingerprint: string;
}

/**
 * The tool servers of the agents that used `/mcp` lately, one per agent, kept across requests so
 * a call costs the call, not a server's construction. Keyed by principal id and rebuilt when the
 * principal's row changes; the least recently used is dropped past `max` (an idle server holds
 * nothing but memory: the store is the state). Whoever asks is checked on every request before a
 * server is looked up here (auth.ts), and the server itself refuses a call for anyone else.
 */
export class AgentToolServers {
  readonly #entries = new Map<string, Entry>();

  constructor(
    /** Builds the agent's server; its reads' receipts go to `receipts` (the router, per request). */
    private readonly build: (agent: Principal, receipts: ReceiptHolder) => McpServer,
    private readonly max = 128,
  ) {}

  /** The agent's server, connected to its router: built on first use or after a change. */
  async serverFor(agent: Principal): Promise<AgentToolServer> {
    const fingerprint = JSON.stringify(agent);
    const found = this.#entries.get(agent.id);
    this.#entries.delete(agent.id);
    if (found && found.fingerprint === fingerprint) {
      this.#entries.set(agent.id, found);
      return found;
    }
    if (found) this.#retire(found);
    const router = new RequestRouterTransport();
    const server = this.build(agent, router);
    await server.connect(withOneLineErrors(router));
    const entry = { server, router, fingerprint };
    this.#entries.set(agent.id, entry);
    for (const [id, oldest] of this.#entries) {
      if (this.#entries.size <= this.max) break;
      this.#entries.delete(id);
      this.#retire(oldest);
    }
    return entry;
  }

  /** How many servers are kept now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Closes every kept server (the host is stopping). */
  closeAll(): void {
    for (const entry of this.#entries.values()) this.#retire(entry);
    this.#entries.clear();
  }

  // A server still answering finishes first: its requests hold their own router.
  #retire(entry: Entry): void {
    if (entry.router.busy === 0) void entry.server.close();
  }
}
