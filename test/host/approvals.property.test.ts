// A decision is applied at most once, and a decided request never changes (docs/approvals.md), over
// any interleaving of asks, decisions, timeouts and applications (fast-check, SQLite).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addAgentManager } from '../../src/host/agents/agent-managers.js';
import { decideApprovalRequest, sweepExpiredApprovals } from '../../src/host/approvals/decisions.js';
import { requestApproval } from '../../src/host/approvals/requests.js';
import type { ApprovalAsk } from '../../src/host/approvals/subject.js';
import type { HostContext } from '../../src/host/identity/context.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { markApprovalApplied } from '../../src/store/ops/approvals.js';
import { type ConformanceHost, openConformanceHost } from '../conformance/backend.js';

const ask = (n: number): ApprovalAsk => ({
  client: 'codex',
  kind: 'command',
  subject: { command: `touch f${n}`, cwd: '/w' },
  turnId: null,
});

type Op =
  | { op: 'ask'; what: number }
  | { op: 'decide'; pick: number; allow: boolean }
  | { op: 'tick'; ms: number }
  | { op: 'apply'; pick: number };

const OPS = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant('ask' as const), what: fc.integer({ min: 0, max: 2 }) }),
    fc.record({ op: fc.constant('decide' as const), pick: fc.nat(), allow: fc.boolean() }),
    fc.record({ op: fc.constant('tick' as const), ms: fc.integer({ min: 100, max: 1500 }) }),
    fc.record({ op: fc.constant('apply' as const), pick: fc.nat() }),
  ),
  { minLength: 1, maxLength: 25 },
);

describe('approvals at most once (property, sqlite)', () => {
  let h: ConformanceHost;
  let meg: Principal;
  let run = 0;

  beforeAll(async () => {
    h = await openConformanceHost('sqlite', 'approvals-prop');
    meg = await h.person('meg');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('no request is applied twice, a decision never changes, and one fingerprint has one open request', async () => {
    await fc.assert(
      fc.asyncProperty(OPS, async (ops: Op[]) => {
        // A fresh agent per run, on a clock the run moves.
        const agentName = `bot${run++}`;
        await h.agent(agentName, 'turn');
        await addAgentManager(h.ctx, h.owner, agentName, 'meg');
        let clock = Date.parse('2026-01-01T00:00:00Z');
        const ctx: HostContext = { ...h.ctx, now: () => new Date(clock) };
        const agent = (await h.ctx.store.db
          .selectFrom('principals')
          .selectAll()
          .where('name', '=', agentName)
          .executeTakeFirstOrThrow()) as Principal;
        const ids: string[] = [];
        const decided = new Map<string, string>();
        const applied = new Set<string>();
        for (const o of ops) {
          if (o.op === 'ask') {
            const { row } = await requestApproval(ctx, agent, ask(o.what), 1000);
            if (!ids.includes(row.id)) ids.push(row.id);
          } else if (o.op === 'tick') {
            clock += o.ms;
            await sweepExpiredApprovals(ctx, agent.id);
          } else if (ids.length > 0) {
            const id = ids[o.pick % ids.length] as string;
            if (o.op === 'decide') {
              await decideApprovalRequest(ctx, meg, { id, decision: o.allow ? 'allow' : 'deny' }).catch(
                (err: { code?: string }) => expect(err.code).toBe('conflict'),
              );
            } else {
              const ok = await ctx.store.transaction((trx) =>
                markApprovalApplied(trx, id, new Date(clock).toISOString()),
              );
              if (ok) {
                expect(applied.has(id)).toBe(false);
                applied.add(id);
              }
            }
          }
          const rows = await h.ctx.store.db
            .selectFrom('approvals')
            .selectAll()
            .where('agent_id', '=', agent.id)
            .execute();
          for (const r of rows) {
            if (r.status !== 'pending') {
              const before = decided.get(r.id);
              if (before !== undefined) expect(`${r.status}|${r.decided_at}|${r.note}`).toBe(before);
              decided.set(r.id, `${r.status}|${r.decided_at}|${r.note}`);
            }
            if (applied.has(r.id)) expect(r.applied_at).not.toBeNull();
            else expect(r.applied_at).toBeNull();
          }
          const open = rows.filter(
            (r) => r.status === 'pending' || (r.status !== 'expired' && r.applied_at === null),
          );
          expect(new Set(open.map((r) => r.fingerprint)).size).toBe(open.length);
        }
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
