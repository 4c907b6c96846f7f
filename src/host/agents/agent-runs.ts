import { hostname } from 'node:os';
import { SluiceError } from '../../core/errors.js';
import type { AgentRun, RunDriver, RunState } from '../../core/wire/index.js';
import {
  type AgentRunReport,
  claimAgentRuns,
  deleteAgentRun,
  findAgentRun,
  listAgentRuns,
  type NamedAgentRunRow,
  releaseAgentRuns,
  reportAgentRun,
  reportAgentRunModelError,
  setAgentRunDesired,
  upsertAgentRun,
} from '../../store/ops/agent-runs.js';
import { appendEvent } from '../../store/ops/events.js';
import { findPrincipalByName, updateSettlement } from '../../store/ops/principals.js';
import { requireRunControl } from '../identity/access.js';
import { announceCommit, type HostContext, nowIso } from '../identity/context.js';
import { addPrincipal, type Principal, resolveAgent, validateName } from '../identity/principals.js';
import { managerOnAdd } from './agent-managers.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { AgentRun, RunDriver, RunState };

// Agents the host runs (docs/agents.md): `sluice agent run` registers a run spec, the `sluice serve`
// of the same machine and home supervises it (src/surfaces/agents/supervisor.ts), and the agent's
// managers start, stop and restart it from the CLI or the page. The page never creates a spec: what
// runs, and in which folder, is a CLI act on the machine.

/** A run with where it is registered (a device sees it without them: `AgentRun`). */
export interface AgentRunView extends AgentRun {
  machine: string;
  home: string;
}

/** This machine, as run specs name it. */
export function thisMachine(): string {
  return hostname();
}

function parseArgs(text: string): string[] {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((a): a is string => typeof a === 'string') : [];
  } catch {
    return [];
  }
}

/** The view of a spec row at `now`. */
export function runView(row: NamedAgentRunRow, now: Date): AgentRunView {
  const held = row.holder !== null && row.held_until !== null && row.held_until > now.toISOString();
  let state: RunState;
  if (!held) state = row.desired === 'running' ? 'no-host' : 'stopped';
  else if (row.desired === 'stopped' && (row.state === 'running' || row.state === 'starting'))
    state = 'stopping';
  else state = row.state;
  return {
    agent: row.name,
    driver: row.driver,
    cwd: row.cwd,
    args: parseArgs(row.args),
    desired: row.desired,
    state,
    pid: held && (state === 'running' || state === 'starting' || state === 'stopping') ? row.pid : null,
    lastError: row.last_error,
    // A driver that is not running reaches no model: only a running one's error is current.
    modelError: held && (state === 'running' || state === 'stopping') ? row.model_error : null,
    restarts: row.restarts,
    stateAt: row.state_at,
    machine: row.machine,
    home: row.home,
  };
}

/** One short label per state, for `sluice agent ls` and the page. */
export function runStateLabel(view: Pick<AgentRunView, 'state' | 'lastError' | 'modelError'>): string {
  switch (view.state) {
    case 'running':
      return view.modelError ? `running; model error: ${view.modelError}` : 'running';
    case 'no-host':
      return 'waiting for sluice serve';
    case 'crashed':
      return view.lastError ? `crashed: ${view.lastError}` : 'crashed';
    default:
      return view.state;
  }
}

export interface RegisterRunInput {
  name: string;
  driver: RunDriver;
  cwd: string;
  args: readonly string[];
}

export interface RegisteredRun {
  agent: Principal;
  /** The agent did not exist: it was added (settling by turns). */
  created: boolean;
  /** The agent settled explicitly and now settles by turns (what a driver needs). */
  settled: boolean;
}

/**
 * `sluice agent run`: adds the agent when there is none (the caller manages it, as with `agent
 * add`), switches it to turn settlement (a driver settles each turn; docs/drivers.md), and
 * registers or replaces its run spec for this machine and home, asking for it to run.
 */
export async function registerAgentRun(
  ctx: HostContext,
  caller: Principal,
  input: RegisterRunInput,
): Promise<RegisteredRun> {
  const name = validateName(input.name, 'agent name');
  if (input.driver !== 'claude' && input.driver !== 'codex')
    throw new SluiceError('invalid_params', `--driver must be claude or codex, not ${String(input.driver)}`);
  let agent = await findPrincipalByName(ctx.store.db, name);
  let created = false;
  if (!agent) {
    const managerId = managerOnAdd(caller);
    agent = await addPrincipal(ctx, {
      name,
      kind: 'agent',
      settlement: 'turn',
      ...(managerId === undefined ? {} : { managerId }),
    });
    created = true;
  } else if (agent.kind !== 'agent') {
    throw new SluiceError('invalid_params', `${name} is a person, not an agent: only agents run`);
  }
  const target = agent;
  const at = nowIso(ctx);
  const settled = await ctx.store.transaction(async (trx) => {
    await requireRunControl(trx, caller, target);
    const switchSettlement = target.settlement !== 'turn';
    if (switchSettlement) await updateSettlement(trx, target.id, 'turn');
    await upsertAgentRun(trx, {
      agent_id: target.id,
      driver: input.driver,
      cwd: input.cwd,
      args: JSON.stringify(input.args),
      machine: thisMachine(),
      home: ctx.home,
      created_by: caller.id,
      at,
    });
    await appendEvent(trx, { kind: 'agent.run', agent_id: target.id, created_at: at });
    return switchSettlement;
  });
  announceCommit(ctx);
  return { agent: { ...target, settlement: 'turn' }, created, settled };
}

function noSpec(agent: string): SluiceError {
  return new SluiceError(
    'not_found',
    `${agent} is not run by the host: register it with sluice agent run ${agent} --driver claude|codex --cwd DIR`,
  );
}

export type RunAction = 'start' | 'stop' | 'restart';

/** Start, stop or restart a registered agent (the owner or a manager); returns the new view. */
export async function controlAgentRun(
  ctx: HostContext,
  caller: Principal,
  agentName: string,
  act: RunAction,
): Promise<AgentRunView> {
  const agent = await resolveAgent(ctx, agentName);
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    await requireRunControl(trx, caller, agent);
    const desired = act === 'stop' ? 'stopped' : 'running';
    // Start skips a crashed driver's restart delay (docs/agents.md): the host sees a new start only
    // as a new restart_seq, since the run was asked to run all along.
    const now =
      act === 'restart' || (act === 'start' && (await findAgentRun(trx, agent.id))?.state === 'crashed');
    if (!(await setAgentRunDesired(trx, agent.id, desired, at, now))) throw noSpec(agent.name);
    await appendEvent(trx, { kind: 'agent.run', agent_id: agent.id, created_at: at });
  });
  announceCommit(ctx);
  return (await agentRunStatus(ctx, caller, agentName)) as AgentRunView;
}

/** Removes the agent's run spec (the supervisor stops it); the agent and its inbox stay. */
export async function forgetAgentRun(ctx: HostContext, caller: Principal, agentName: string): Promise<void> {
  const agent = await resolveAgent(ctx, agentName);
  const at = nowIso(ctx);
  await ctx.store.transaction(async (trx) => {
    await requireRunControl(trx, caller, agent);
    if (!(await deleteAgentRun(trx, agent.id))) throw noSpec(agent.name);
    await appendEvent(trx, { kind: 'agent.run', agent_id: agent.id, created_at: at });
  });
  announceCommit(ctx);
}

/** The agent's run as its owner or a manager sees it, or null when it has no spec. */
export async function agentRunStatus(
  ctx: HostContext,
  caller: Principal,
  agentName: string,
): Promise<AgentRunView | null> {
  const agent = await resolveAgent(ctx, agentName);
  await requireRunControl(ctx.store.db, caller, agent);
  const row = await findAgentRun(ctx.store.db, agent.id);
  return row ? runView({ ...row, name: agent.name }, ctx.now()) : null;
}

/** The agent, when the caller may control its runs (the owner or a manager); `denied` otherwise. */
export async function requireAgentRunControl(
  ctx: HostContext,
  caller: Principal,
  agentName: string,
): Promise<Principal> {
  const agent = await resolveAgent(ctx, agentName);
  await requireRunControl(ctx.store.db, caller, agent);
  return agent;
}

/** Every run by agent name (`sluice agent ls`, which needs the home or the database anyway). */
export async function agentRunsByName(ctx: HostContext): Promise<Map<string, AgentRunView>> {
  const now = ctx.now();
  return new Map((await listAgentRuns(ctx.store.db)).map((row) => [row.name, runView(row, now)]));
}

// --- For the supervisor (src/surfaces/agents/supervisor.ts) -------------------------------------

/** A spec as the supervisor runs it. */
export interface HeldRun {
  agentId: string;
  agent: string;
  driver: RunDriver;
  cwd: string;
  args: string[];
  desired: 'running' | 'stopped';
  restartSeq: number;
}

/**
 * Takes or renews the lease on this machine's and home's specs for `leaseMs` and returns the ones
 * `holder` holds: what it must run (or stop).
 */
export async function claimRuns(ctx: HostContext, holder: string, leaseMs: number): Promise<HeldRun[]> {
  const now = ctx.now();
  const rows = await ctx.store.transaction((trx) =>
    claimAgentRuns(trx, {
      holder,
      machine: thisMachine(),
      home: ctx.home,
      now: now.toISOString(),
      until: new Date(now.getTime() + leaseMs).toISOString(),
    }),
  );
  return rows.map((row) => ({
    agentId: row.agent_id,
    agent: row.name,
    driver: row.driver,
    cwd: row.cwd,
    args: parseArgs(row.args),
    desired: row.desired,
    restartSeq: Number(row.restart_seq),
  }));
}

/** Records a run's state while `holder` holds it (a lost lease writes nothing). */
export async function reportRun(
  ctx: HostContext,
  holder: string,
  agentId: string,
  report: Omit<AgentRunReport, 'state_at'>,
): Promise<void> {
  await reportAgentRun(ctx.store.db, agentId, holder, { ...report, state_at: nowIso(ctx) });
}

/** Records the model error the running driver reported, or null once a turn succeeded. */
export async function reportRunModelError(
  ctx: HostContext,
  holder: string,
  agentId: string,
  modelError: string | null,
): Promise<void> {
  await reportAgentRunModelError(ctx.store.db, agentId, holder, modelError);
}

/** A supervisor stopping: its runs read as stopped, and are free for the next host. */
export async function releaseRuns(ctx: HostContext, holder: string): Promise<void> {
  await releaseAgentRuns(ctx.store.db, holder, nowIso(ctx));
}
