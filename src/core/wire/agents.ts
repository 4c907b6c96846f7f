// Host-run agents from a device (`agent.status|start|stop|restart|connect`; docs/agents.md).

export type RunDriver = 'claude' | 'codex';

/**
 * What a person sees of a run: the supervisor's report, read against the lease. `stopping`: asked
 * to stop, still running; `no-host`: asked to run but no `sluice serve` of its machine and home
 * holds it (none is running, or it died).
 */
export type RunState = 'starting' | 'running' | 'stopping' | 'stopped' | 'crashed' | 'no-host';

/** A run as a device sees it (without the machine and home it is registered on). */
export interface AgentRun {
  agent: string;
  driver: RunDriver;
  cwd: string;
  args: string[];
  desired: 'running' | 'stopped';
  state: RunState;
  pid: number | null;
  /** The last line the driver wrote to stderr before it exited (a crash), else null. */
  lastError: string | null;
  /**
   * While the driver runs: the last model error its client reported (Codex retrying a model it
   * cannot reach, a Claude turn ended by an API error), until a turn succeeds; else null.
   */
  modelError: string | null;
  /** Restarts after crashes since the supervisor took it. */
  restarts: number;
  stateAt: string | null;
}

/** The `agent.status` reply (and `agent.start|stop|restart`). */
export interface AgentStatusReply {
  agent: string;
  /** Null when the host does not run this agent (`sluice agent run` registers it). */
  run: AgentRun | null;
  /** The end of its log, when the log is on this host's machine and home; else null. */
  logTail: string | null;
}

export interface ConnectCommand {
  /** Stable id for the page: `run`, `hooks`, `mcp`. */
  id: 'run' | 'hooks' | 'mcp';
  /** What the command does, one line. */
  label: string;
  command: string;
}

/** The `agent.connect` reply: the commands that attach a client to the agent on this host. */
export interface ConnectInfo {
  agent: string;
  /** How `sluice` is spelled here: `sluice`, or this clone's bin/sluice.js. */
  sluice: string;
  /** The one-time step that puts `sluice` on PATH, when it is not (null when it is). */
  pathStep: string | null;
  /**
   * The host's database is PostgreSQL: the commands need `SLUICE_DB` set to its URL, which the
   * page never shows (it may hold a password).
   */
  needsDatabaseUrl: boolean;
  /** Per client: run it from the host, install hooks into a project, the MCP server. */
  claude: ConnectCommand[];
  codex: ConnectCommand[];
}
