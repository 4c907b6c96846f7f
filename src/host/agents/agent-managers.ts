import { SluiceError } from '../../core/errors.js';
import {
  deleteAgentManager,
  insertAgentManager,
  isAgentManager,
  listAgentManagers,
} from '../../store/ops/agent-managers.js';
import { sharedChannelIds } from '../../store/ops/channels.js';
import { appendEvent } from '../../store/ops/events.js';
import { findPrincipalById } from '../../store/ops/principals.js';
import type { Db } from '../../store/store.js';
import { isHostOwner, mayManageAgent, requireManagerChange } from '../identity/access.js';
import { announceCommit, type HostContext, nowIso } from '../identity/context.js';
import { type Principal, resolveAgent, resolvePrincipal } from '../identity/principals.js';

// An agent's managers (docs/security.md, "Who may do what"): persons who, besides the agent itself
// and the host owner, may pause or resume its whole queue and change its managers.

/**
 * Who becomes the manager of an agent this caller adds: the caller, when a person other than the
 * owner (the owner may anyway); nobody otherwise.
 */
export function managerOnAdd(caller: Principal): string | undefined {
  return caller.kind === 'person' && !isHostOwner(caller) ? caller.id : undefined;
}

/**
 * The agent's managers by name: for whoever may manage it or shares a channel with it (who to ask
 * to pause it). Anyone else is `denied`.
 */
export async function agentManagers(
  ctx: HostContext,
  caller: Principal,
  agentName: string,
): Promise<{ name: string; created_at: string }[]> {
  const agent = await resolveAgent(ctx, agentName);
  const db = ctx.store.db;
  const shares = caller.kind === 'person' && (await sharedChannelIds(db, caller.id, agent.id)).length > 0;
  if (!shares && !(await mayManageAgent(db, caller, agent))) {
    throw new SluiceError(
      'denied',
      `only ${agent.name}, the owner, a manager or a person who shares a channel with it may list its managers`,
    );
  }
  return listAgentManagers(db, agent.id);
}

async function resolveManagerCandidate(ctx: HostContext, personName: string): Promise<Principal> {
  const person = await resolvePrincipal(ctx, personName);
  if (person.kind !== 'person')
    throw new SluiceError('invalid_params', `${personName} is an agent: only a person manages an agent`);
  return person;
}

/** Makes a person a manager of the agent (owner or a current manager only). False if already one. */
export async function addAgentManager(
  ctx: HostContext,
  caller: Principal,
  agentName: string,
  personName: string,
): Promise<boolean> {
  const agent = await resolveAgent(ctx, agentName);
  const person = await resolveManagerCandidate(ctx, personName);
  const at = nowIso(ctx);
  const added = await ctx.store.transaction(async (trx) => {
    await requireManagerChange(trx, caller, agent);
    if (await isAgentManager(trx, agent.id, person.id)) return false;
    await insertAgentManager(trx, { agent_id: agent.id, person_id: person.id, created_at: at });
    await appendEvent(trx, { kind: 'agent.managers', agent_id: agent.id, created_at: at });
    return true;
  });
  announceCommit(ctx);
  return added;
}

/** Removes a manager (owner or a current manager only; a manager may remove themselves). */
export async function removeAgentManager(
  ctx: HostContext,
  caller: Principal,
  agentName: string,
  personName: string,
): Promise<void> {
  const agent = await resolveAgent(ctx, agentName);
  const person = await resolveManagerCandidate(ctx, personName);
  await ctx.store.transaction(async (trx) => {
    await requireManagerChange(trx, caller, agent);
    if (!(await deleteAgentManager(trx, agent.id, person.id)))
      throw new SluiceError('not_found', `${person.name} does not manage ${agent.name}`);
    await appendEvent(trx, { kind: 'agent.managers', agent_id: agent.id, created_at: nowIso(ctx) });
  });
  announceCommit(ctx);
}

/**
 * The `agent.managed` push for one subscriber after an agent was added or its managers changed:
 * the agent (name and kind are public, as in `principal.list`) and whether the subscriber manages
 * it now (access.ts {@link mayManageAgent}), so their page adds or drops it. Null if it is gone.
 */
export async function agentListing(
  db: Db,
  caller: Principal,
  agentId: string,
): Promise<{ agent: { id: string; name: string; kind: 'agent' }; managed: boolean } | null> {
  const agent = await findPrincipalById(db, agentId);
  if (!agent || agent.kind !== 'agent') return null;
  return {
    agent: { id: agent.id, name: agent.name, kind: 'agent' },
    managed: await mayManageAgent(db, caller, agent),
  };
}
