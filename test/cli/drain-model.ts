// A model that drains its inbox exactly as Sluice's outputs say, running every command for real in
// this process (test/e2e/support/drain-eval.ts does the same through the real clients): it handles
// the complete bodies it holds with one `sluice message handle` and runs the continuation it was
// given in the same command; a body that comes in parts (a page's last row, or read parts) is
// joined and handled only once its last part has been printed.
import { expect } from 'vitest';
import { runCliInProcess } from '../../proof/fuzz-cli.js';
import { shellOutputCap } from '../../src/core/output-cap.js';
import type { HostContext } from '../../src/host/context.js';
import { deliveryFor } from '../../src/host/delivery.js';
import type { Principal } from '../../src/host/principals.js';
import { HOOK_LIMITS } from '../../src/surfaces/hooks/adapters.js';

export type ShellClient = 'claude' | 'codex';

/** The environment each client gives a model's shell command. */
export const SHELLS: Record<ShellClient, Record<string, string>> = {
  claude: { CLAUDECODE: '1', CODEX_THREAD_ID: '' },
  codex: { CODEX_THREAD_ID: '01a22cff-2e59-7b51-9df3-44d78b6a7d95' },
};

const LIST = 'sluice message ls --json --include-body';

interface Entry {
  id: string;
  body: string;
  part?: { offset: number; total: number };
  next?: string | null;
}

/** What a drain did: model requests (the closing one included), commands, and the first command. */
export interface DrainRun {
  requests: number;
  commands: string[];
  /** Ids in the order they were handled, with the body the model held for each. */
  handled: { id: string; body: string }[];
  /** Output shapes seen (for coverage checks): 'envelope', 'head list', 'head read', 'part', … */
  shapes: Set<string>;
}

/**
 * Drains `agent`'s inbox as a model under `client` would, from its hook's delivery on. `sent` maps
 * every pending id to its stored body: each command's output is checked against the client's cap,
 * every part against the body it belongs to, and the inbox against what was handled (a listing or
 * read consumes nothing; only what the model handled left the inbox).
 */
export async function drainAsModel(
  ctx: HostContext,
  agent: Principal,
  client: ShellClient,
  sent: ReadonlyMap<string, string>,
): Promise<DrainRun> {
  const env = SHELLS[client];
  const cap = shellOutputCap(client);
  const run: DrainRun = { requests: 1, commands: [], handled: [], shapes: new Set() };
  const joined = new Map<string, string>();
  const pendingIds = async () => {
    const r = await runCliInProcess(['message', 'ls', '--json', '--as', agent.name], env);
    return (JSON.parse(r.stdout.toString('utf8')) as { id: string }[]).map((m) => m.id);
  };

  /** One model request's tool call: handle `rows`, then run `then` (a listing or read); its output. */
  const command = async (rows: readonly Entry[], then: string | null): Promise<string> => {
    run.requests++;
    let out = '';
    if (rows.length > 0) {
      const lines = rows.map((r) => JSON.stringify({ id: r.id, body: `Done: ${r.id}` })).join('\n');
      const r = await runCliInProcess(['message', 'handle', '--as', agent.name], env, lines);
      expect(r.stderr).toBe('');
      out += r.stdout.toString('utf8');
      run.handled.push(...rows.map((m) => ({ id: m.id, body: m.body })));
    }
    if (then !== null) {
      run.commands.push(then);
      const r = await runCliInProcess([...then.split(' ').slice(1), '--as', agent.name], env);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      out += r.stdout.toString('utf8');
    }
    // What the client shows the model: the whole output of the one command.
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(cap);
    // Nothing left the inbox but what the model handled.
    const handled = new Set(run.handled.map((m) => m.id));
    expect(await pendingIds()).toEqual([...sent.keys()].filter((id) => !handled.has(id)));
    return out;
  };

  /** A row as the model takes it: whole, or one more part of a body it joins (complete or not). */
  const take = (m: Entry): Entry | null => {
    const stored = sent.get(m.id);
    expect(stored, `${m.id} was never sent`).toBeDefined();
    if (m.part === undefined) {
      expect(joined.has(m.id)).toBe(false);
      expect(m.body).toBe(stored);
      return { id: m.id, body: m.body };
    }
    run.shapes.add(m.part.offset === 0 ? 'first part' : 'later part');
    const soFar = joined.get(m.id) ?? '';
    // Parts come in order, without a gap, and are slices of the stored body.
    expect(m.part).toEqual({ offset: soFar.length, total: (stored as string).length });
    expect(m.body.length).toBeGreaterThan(0);
    // Stored bodies are well-formed: a surrogate at a part's edge would be half of a split pair.
    expect(/^[\udc00-\udfff]|[\ud800-\udbff]$/.test(m.body), 'a part splits a surrogate pair').toBe(false);
    const body = soFar + m.body;
    expect((stored as string).startsWith(body)).toBe(true);
    if (body.length < m.part.total) {
      joined.set(m.id, body);
      return null;
    }
    joined.delete(m.id);
    return { id: m.id, body };
  };

  const delivery = await deliveryFor(ctx, agent, { limits: HOOK_LIMITS[client] });
  let holding: Entry[] = [];
  let next: string | null = null;
  let afterHead: string | null = null;
  const envelopeIds = new Set(delivery.included);
  if (delivery.included.length > 0) {
    run.shapes.add('envelope');
    holding = [...envelopeIds].map((id) => ({ id, body: sent.get(id) as string }));
    // The listing the instruction names (with the room this delivery leaves for the first page).
    next = delivery.overflow > 0 ? (/`&& (sluice message ls [^`]*)`/.exec(delivery.text)?.[1] ?? null) : null;
    expect(delivery.overflow > 0 ? next : null).toBe(next);
  } else if (delivery.oversizedHead?.list) {
    run.shapes.add('head list');
    next = delivery.oversizedHead.list;
  } else if (delivery.oversizedHead) {
    run.shapes.add('head read');
    next = `sluice message read ${delivery.oversizedHead.id} --json`;
    if (delivery.totalPending > 1) afterHead = `${LIST} --since ${delivery.oversizedHead.id}`;
  }
  for (let guard = 0; holding.length > 0 || next !== null; guard++) {
    expect(guard).toBeLessThan(400);
    const out = await command(holding, next);
    holding = [];
    if (next === null) break;
    next = null;
    const value = JSON.parse(out.trimEnd().split('\n').at(-1) as string);
    if (Array.isArray(value.messages)) {
      for (const m of value.messages as Entry[]) {
        const whole = take(m);
        if (whole) holding.push(whole);
      }
      next = value.next;
      continue;
    }
    // A read part: the next part first; the last one is handled with the list behind the head.
    const whole = take(value);
    next = value.next;
    if (whole) {
      holding = [whole];
      next = afterHead;
      afterHead = null;
    }
  }
  return run;
}
