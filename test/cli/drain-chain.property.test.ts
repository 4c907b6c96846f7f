import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../../proof/fuzz-cli.js';
import { shellOutputCap } from '../../src/core/output-cap.js';
import type { HostContext } from '../../src/host/context.js';
import { deliveryFor } from '../../src/host/delivery.js';
import { initHome, openHost } from '../../src/host/home.js';
import { sendMessage } from '../../src/host/messages.js';
import { addPrincipal, type Principal, resolvePrincipal } from '../../src/host/principals.js';
import { HOOK_LIMITS } from '../../src/surfaces/hooks/adapters.js';
import { hostilePiece, hostileString } from '../core/arbitraries.js';
import { tempHome } from '../support/host.js';

// Issue 26: a drain as the delivery asks for it — handle what the model holds and run the next
// listing in the same command — never prints more than the client's shell-output cap in one
// command, for hostile bodies and subjects: the envelope's receipts with the first page, each
// page's receipts with the page its `next` names (sized by the `--max-bytes` it carries), a head
// read in parts alone and its reply with the listing behind it. Every command runs for real in
// this process (handle archives), in Claude Code's or Codex's shell environment.

type Client = 'claude' | 'codex';
const SHELLS: Record<Client, Record<string, string>> = {
  claude: { CLAUDECODE: '1', CODEX_THREAD_ID: '' },
  codex: { CODEX_THREAD_ID: '01a22cff-2e59-7b51-9df3-44d78b6a7d95' },
};

/** The store refuses text that is not well-formed (a lone surrogate): replace those. */
const wellFormed = (s: string) =>
  s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

/** Bodies from tiny to larger than a page: hostile text, repeated pieces, or one multi-byte unit. */
const body: fc.Arbitrary<string> = fc
  .oneof(
    hostileString(60),
    fc
      .tuple(fc.array(hostilePiece, { minLength: 1, maxLength: 8 }), fc.nat({ max: 400 }))
      .map(([pieces, times]) => pieces.join('').repeat(times + 1)),
    fc
      .tuple(
        fc.constantFrom('x', '語', '😀', '"', '\\', '\u0001', '\u2028'),
        fc.integer({ min: 1, max: 14_000 }),
      )
      .map(([unit, n]) => unit.repeat(Math.ceil(n / unit.length))),
  )
  .map(wellFormed)
  .filter((b) => b.trim() !== '');

const subject = fc.option(
  hostileString(40)
    .map(wellFormed)
    .filter((s) => s.trim() !== ''),
  { nil: undefined },
);

/** An oldest message over the hook's cap: within a Claude page, or larger than any page. */
const bigHead = fc.option(
  fc
    .tuple(fc.constantFrom('x', '語', '"', '\u0001'), fc.integer({ min: 10_500, max: 40_000 }))
    .map(([unit, bytes]) =>
      unit.repeat(Math.ceil(bytes / Buffer.byteLength(JSON.stringify(unit).slice(1, -1)))),
    ),
  { nil: undefined },
);

interface Row {
  id: string;
  body: string;
}

describe('a drain never prints more than the client cap in one command', { timeout: 300_000 }, () => {
  const { home, cleanup } = tempHome();
  let ctx: HostContext;
  let owner: Principal;
  let agents = 0;
  const previous = { SLUICE_HOME: process.env.SLUICE_HOME, SLUICE_AS: process.env.SLUICE_AS };

  beforeAll(async () => {
    ctx = await openHost({ home, durability: 'normal' });
    await initHome(ctx);
    owner = await resolvePrincipal(ctx, 'owner');
    process.env.SLUICE_HOME = home;
    process.env.SLUICE_AS = '';
  });
  afterAll(async () => {
    for (const [k, v] of Object.entries(previous)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await ctx?.store.close();
    cleanup();
  });

  it('envelope receipts + first page, page receipts + next page, reply + the list behind a head: each within the cap', async () => {
    const shapes = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(body, subject), { minLength: 1, maxLength: 24 }),
        fc.constantFrom<Client>('claude', 'codex'),
        bigHead,
        async (rest, client, oldest) => {
          const messages: [string, string | undefined][] =
            oldest === undefined ? rest : [[oldest, undefined], ...rest];
          const agent = `bot${agents++}`;
          await addPrincipal(ctx, { name: agent, kind: 'agent' });
          const bot = await resolvePrincipal(ctx, agent);
          const sent: Row[] = [];
          for (const [text, subj] of messages) {
            const m = await sendMessage(ctx, owner, { to: agent, body: text, subject: subj });
            sent.push({ id: m.message_id, body: text });
          }
          const cap = shellOutputCap(client);
          const env = SHELLS[client];
          /** One shell command: `handle` for `rows` (their receipts), then `then` (a listing or read). */
          const command = async (rows: readonly Row[], then: string | null): Promise<string> => {
            let out = '';
            if (rows.length > 0) {
              const lines = rows.map((r) => JSON.stringify({ id: r.id, body: `Done: ${r.id}` })).join('\n');
              const r = await runCliInProcess(['message', 'handle', '--as', agent], env, lines);
              expect(r.stderr).toBe('');
              out += r.stdout.toString('utf8');
            }
            if (then !== null) {
              const r = await runCliInProcess([...then.split(' ').slice(1), '--as', agent], env);
              expect(r.stderr).toBe('');
              expect(r.code).toBe(0);
              out += r.stdout.toString('utf8');
            }
            // What the client shows the model: the whole output of the one command.
            expect(Buffer.byteLength(out)).toBeLessThanOrEqual(cap);
            return out;
          };
          const lastJson = (out: string) => JSON.parse(out.trimEnd().split('\n').at(-1) as string);

          const delivery = await deliveryFor(ctx, bot, { limits: HOOK_LIMITS[client] });
          const seen: Row[] = [];
          let holding: Row[] = [];
          let next: string | null;
          let after: string | null = null;
          if (delivery.included.length > 0) {
            holding = sent.slice(0, delivery.included.length);
            next = delivery.overflow > 0 ? 'sluice message ls --json --include-body' : null;
            shapes.add('envelope');
          } else {
            // An oversized head: the page it fits, or its parts first.
            const head = delivery.oversizedHead;
            next = head?.list ?? `sluice message read ${head?.id} --json`;
            shapes.add(head?.list ? 'head in a page' : 'head in parts');
            // The instruction chains the list behind a head read in parts to its reply.
            if (!head?.list && sent.length > 1)
              after = `sluice message ls --json --include-body --since ${head?.id}`;
          }
          for (let guard = 0; holding.length > 0 || next !== null; guard++) {
            expect(guard).toBeLessThan(400);
            seen.push(...holding);
            const out = await command(holding, next);
            holding = [];
            if (next === null) break;
            const value = lastJson(out);
            if (Array.isArray(value.messages)) {
              holding = value.messages.map((m: Row) => ({ id: m.id, body: m.body }));
              if (value.after !== undefined) after = value.after;
              next = value.next;
              if (holding.length > 0) shapes.add(`page of ${Math.min(holding.length, 3)}+`);
              continue;
            }
            // A read part: the parts come alone; the last one is handled with the list behind it.
            let joined = value.body as string;
            let part = value;
            while (part.next !== null) {
              part = lastJson(await command([], part.next));
              joined += part.body;
            }
            holding = [{ id: value.id, body: joined }];
            next = after;
            after = null;
          }
          // Lossless and FIFO: every body once, whole, in order; the inbox is empty.
          expect(seen).toEqual(sent);
          const left = await runCliInProcess(['message', 'ls', '--json', '--as', agent], env);
          expect(JSON.parse(left.stdout.toString('utf8'))).toEqual([]);
        },
      ),
      { numRuns: 30 },
    );
    expect([...shapes]).toEqual(expect.arrayContaining(['envelope', 'head in a page', 'head in parts']));
  });
});
