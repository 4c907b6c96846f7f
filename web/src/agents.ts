// The sidebar's "Agent queues": the agents the person manages (the owner manages every agent), read
// from `principal.list {managed: true}`, and the agents of the channels they are in. An agent the
// person made is there before anyone wrote to it (issue 23: the list said "No agents yet" right
// after one was added, and one added from the CLI never appeared).

import type { PrincipalListPage } from './wire.js';

/** The subset of the RPC client this needs (so Node tests can pass a fake). */
type Call = <T>(method: string, params?: Record<string, unknown>) => Promise<T>;

/** Every agent the caller manages, by name, walking `principal.list {managed: true}` pages. */
export async function loadManagedAgents(call: Call): Promise<string[]> {
  const names: string[] = [];
  let after: string | null = null;
  do {
    const page: PrincipalListPage = await call<PrincipalListPage>('principal.list', {
      managed: true,
      ...(after === null ? {} : { after }),
    });
    for (const p of page.principals) if (p.kind === 'agent') names.push(p.name);
    after = page.nextAfter;
  } while (after !== null);
  return names;
}

/** The agents to list: both sources, each name once, in name order. */
export function sidebarAgents(managed: readonly string[], ofChannels: readonly string[]): string[] {
  return [...new Set([...managed, ...ofChannels])].sort();
}

/** The managed list after an `agent.managed` push: the name added (in order) or dropped. */
export function withAgent(list: readonly string[], name: string, managed: boolean): string[] {
  const rest = list.filter((n) => n !== name);
  return managed ? [...rest, name].sort() : rest;
}

/**
 * The agents the sidebar filter box lets through: those whose name contains `query`, any case.
 * `found` are the agents of the channels the host found for it (a DM found by the agent's name
 * whose agent is in no loaded channel), so an agent is found at any number of channels.
 */
export function filterAgents(listed: readonly string[], found: readonly string[], query: string): string[] {
  const wanted = query.trim().toLowerCase();
  if (wanted === '') return [...listed];
  return sidebarAgents(listed, found).filter((name) => name.toLowerCase().includes(wanted));
}
