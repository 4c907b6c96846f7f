import type { AgentStatusReply } from '../../core/wire/index.js';
import {
  type AgentRunView,
  agentRunStatus,
  controlAgentRun,
  type RunAction,
  requireAgentRunControl,
  thisMachine,
} from '../../host/agents/index.js';
import { connectInfo } from '../agents/connect.js';
import { runLogPath, runLogTail } from '../agents/run-log.js';
import { currentLauncher } from '../hooks/install-files.js';
import type { RpcSession } from './methods.js';

// The reply shapes are declared once in core/wire (the page imports them from there).
export type { AgentStatusReply };

// `agent.status|start|stop|restart|connect` (docs/rpc.md, docs/agents.md): host-run agents from a
// device, for the agent's managers only (host/identity/access.ts requireRunControl). A device never creates
// or changes a run spec: what runs, and where, is registered on the machine (`sluice agent run`).

/** The log tail a status carries, UTF-8 bytes (whole lines). */
export const LOG_TAIL_BYTES = 8 * 1024;

function statusReply(session: RpcSession, agent: string, view: AgentRunView | null): AgentStatusReply {
  if (view === null) return { agent, run: null, logTail: null };
  const { home, machine, ...run } = view;
  const here = home === session.ctx.home && machine === thisMachine();
  return { agent, run, logTail: here ? runLogTail(runLogPath(home, agent), LOG_TAIL_BYTES) : null };
}

export async function agentStatus(session: RpcSession, agent: string): Promise<AgentStatusReply> {
  return statusReply(session, agent, await agentRunStatus(session.ctx, session.principal, agent));
}

export async function agentControl(
  session: RpcSession,
  agent: string,
  act: RunAction,
): Promise<AgentStatusReply> {
  return statusReply(session, agent, await controlAgentRun(session.ctx, session.principal, agent, act));
}

export async function agentConnect(session: RpcSession, agentName: string) {
  const agent = await requireAgentRunControl(session.ctx, session.principal, agentName);
  return connectInfo(agent.name, {
    launcher: currentLauncher(),
    home: session.ctx.home,
    dialect: session.ctx.store.dialect,
  });
}
