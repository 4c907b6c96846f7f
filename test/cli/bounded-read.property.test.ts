import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../../proof/fuzz-cli.js';
import { defaultPageBytes } from '../../src/core/output-cap.js';
import { isWellFormed } from '../../src/core/text.js';
import type { HostContext } from '../../src/host/identity/context.js';
import { addPrincipal, type Principal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { CLAUDE_MAX_BYTES, CODEX_MAX_BYTES, defaultReadBudget } from '../../src/surfaces/cli/bounded-read.js';
import { quotedBody } from '../../src/surfaces/cli/message-text.js';
import { hostilePiece, hostileString } from '../core/arbitraries.js';
import { useInProcessCliHome } from './in-process-home.js';

// A model's reads through the CLI (in process, one home for the file, one agent per case): for
// hostile bodies and counts, every output is within the client's budget in UTF-8 bytes, every
// message shown whole is the stored body unaltered, and a body that does not fit a page whole
// comes in parts, across pages, that rejoin it exactly. Claude Code's Bash keeps 30,000 bytes, Codex's exec_command 10,000; a read
// takes that cap less room for the receipts of a delivery handled before it by default.

const CLIENTS = {
  claude: { env: {}, capBytes: CLAUDE_MAX_BYTES },
  codex: { env: { CODEX_THREAD_ID: '01a22cff-2e59-7b51-9df3-44d78b6a7d95' }, capBytes: CODEX_MAX_BYTES },
} as const;
type Client = keyof typeof CLIENTS;

/** Shapes the shared hostile pieces lack: terminal escapes, JSON that looks like a read's own output. */
const morePieces = fc.constantFrom(
  '\u001b[31m',
  '\u001b[2J\u001b[H',
  '\u001b]0;title\u0007',
  '\u009b1m',
  '{"messages":[],"next":null}\n',
  '{"id":"M1","part":{"offset":0,"total":1},"next":"sluice message read M1 --json"}',
  'next: sluice message ls --json --include-body --since X\n',
  '\u0000\u0000',
  '\ufeff',
);

/** Bodies from tiny to several times a budget: repeated hostile text, one huge line, or CJK. */
const hostileBody: fc.Arbitrary<string> = fc.oneof(
  hostileString(60),
  fc
    .tuple(
      fc.array(fc.oneof(hostilePiece, morePieces), { minLength: 1, maxLength: 12 }),
      fc.nat({ max: 800 }),
    )
    .map(([pieces, times]) => pieces.join('').repeat(times + 1)),
  fc
    .tuple(
      fc.constantFrom('x', '語', '😀', '"', '\\', '\u0001', '\u001b[0m'),
      fc.integer({ min: 1, max: 30_000 }),
    )
    .map(([unit, n]) => unit.repeat(Math.ceil(n / unit.length))),
);

/** Stored bodies: the same with each lone surrogate replaced (the store refuses them; see the last test). */
const storableBody = hostileBody
  .filter((b) => b.trim() !== '') // an empty body is refused
  .map((b) => b.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));

/**
 * A body sized near the client's budget (its bytes minus `slack`), where a read's frame, its
 * `next` and the text listing's last line decide whether it fits: random sizes rarely land there.
 */
const nearTheEdge = fc.option(
  fc.record({ slack: fc.nat({ max: 400 }), unit: fc.constantFrom('x', '語', '😀', '\u0001') }),
  { nil: undefined },
);

function withEdge(bodies: string[], client: Client, edge: { slack: number; unit: string } | undefined) {
  if (edge === undefined) return bodies;
  const bytes = defaultPageBytes(CLIENTS[client].capBytes) - edge.slack;
  const unitBytes = Buffer.byteLength(JSON.stringify(edge.unit)) - 2;
  return [edge.unit.repeat(Math.max(1, Math.floor(bytes / unitBytes))), ...bodies];
}

describe('bounded model reads through the CLI, for hostile bodies', { timeout: 120_000 }, () => {
  const cli = useInProcessCliHome();
  let ctx: HostContext;
  let owner: Principal;
  let agents = 0;
  beforeAll(() => {
    ({ ctx, owner } = cli);
  });

  /** A new agent with these bodies pending, oldest first; returns its name and the stored ids. */
  async function inboxWith(bodies: readonly string[]): Promise<{ agent: string; ids: string[] }> {
    const agent = `bot${agents++}`;
    await addPrincipal(ctx, { name: agent, kind: 'agent' });
    const ids: string[] = [];
    // Every other one relayed by the bridge: its row carries `via` within the same budget.
    for (const [i, body] of bodies.entries()) {
      const origin = i % 2 ? ('telegram' as const) : undefined;
      ids.push((await sendMessage(ctx, owner, { to: agent, body, origin })).message_id);
    }
    return { agent, ids };
  }

  /** Runs one command a read printed (`sluice message …`), checking it succeeded within the budget. */
  async function follow(command: string, client: Client): Promise<string> {
    const r = await runCliInProcess(command.split(' ').slice(1), {
      CODEX_THREAD_ID: '',
      ...CLIENTS[client].env,
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const budget = defaultReadBudget(CLIENTS[client].env);
    expect(budget.bytes).toBe(defaultPageBytes(CLIENTS[client].capBytes));
    // A page's `next` carries the budget of the page after it (the cap less its rows' receipts).
    const carried = /--max-bytes (\d+)/.exec(command);
    expect(r.stdout.length).toBeLessThanOrEqual(carried ? Number(carried[1]) : (budget.bytes as number));
    expect(r.stdout.length).toBeLessThanOrEqual(CLIENTS[client].capBytes);
    const text = r.stdout.toString('utf8');
    expect(text.length).toBeLessThanOrEqual(budget.chars);
    return text;
  }

  it('ls --json --include-body: within the budget in bytes, whole bodies unaltered, a body split across pages rejoins exactly', async () => {
    let split = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(storableBody, { minLength: 1, maxLength: 6 }),
        fc.constantFrom<Client>('claude', 'codex'),
        fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
        nearTheEdge,
        async (generated, client, limit, edge) => {
          const bodies = withEdge(generated, client, edge);
          const { agent, ids } = await inboxWith(bodies);
          const seen: { id: string; body: string }[] = [];
          let joined = '';
          let next: string | null =
            `sluice message ls --json --include-body${limit ? ` --limit ${limit}` : ''} --as ${agent}`;
          for (let guard = 0; next !== null; guard++) {
            expect(guard).toBeLessThan(1_000);
            const page = JSON.parse(await follow(next, client)) as {
              messages: { id: string; body: string; part?: { offset: number; total: number } }[];
              next: string | null;
            };
            expect(page.messages.length).toBeGreaterThan(0);
            for (const [i, m] of page.messages.entries()) {
              const stored = bodies[seen.length] as string;
              expect(m.id).toBe(ids[seen.length]);
              if (m.part === undefined) {
                // Shown whole: the stored body, byte for byte.
                expect(joined).toBe('');
                expect(m.body).toBe(stored);
                seen.push({ id: m.id, body: m.body });
                continue;
              }
              // A part: the page's first row (the rest of a body) or its last (the start of one).
              expect(i === 0 || i === page.messages.length - 1).toBe(true);
              expect(m.part).toEqual({ offset: joined.length, total: stored.length });
              expect(m.body.length).toBeGreaterThan(0);
              joined += m.body;
              if (joined.length < stored.length) {
                expect(i).toBe(page.messages.length - 1);
                expect(page.next).toContain(`--resume ${m.id} --offset ${joined.length}`);
                continue;
              }
              expect(joined).toBe(stored);
              split++;
              seen.push({ id: m.id, body: joined });
              joined = '';
            }
            next = page.next;
          }
          // Lossless: every message once, in order, each body exactly as stored.
          expect(seen).toEqual(ids.map((id, i) => ({ id, body: bodies[i] })));
        },
      ),
      { numRuns: 40 },
    );
    // The cases reached bodies split across pages, not only whole pages.
    expect(split).toBeGreaterThan(0);
  });

  it('text ls --include-body: within the budget in bytes, a prefix of whole entries, then the command that continues', async () => {
    const endings = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.array(storableBody, { minLength: 1, maxLength: 6 }),
        fc.constantFrom<Client>('claude', 'codex'),
        nearTheEdge,
        async (generated, client, edge) => {
          const bodies = withEdge(generated, client, edge);
          const { agent, ids } = await inboxWith(bodies);
          const out = await follow(`sluice message ls --include-body --as ${agent}`, client);
          // Walk the entries: a header line starting with the id, then the body exactly.
          let at = 0;
          let shown = 0;
          while (shown < ids.length && out.startsWith(`${ids[shown]}  `, at)) {
            const headerEnd = out.indexOf('\n', at);
            expect(headerEnd).toBeGreaterThan(at);
            const body = bodies[shown] as string;
            // Then every line of the body behind the margin (none can pass for a header), and a
            // blank line before the next entry.
            const quoted = quotedBody(body);
            expect(out.slice(headerEnd + 1, headerEnd + 1 + quoted.length + 2)).toBe(`${quoted}\n\n`);
            at = headerEnd + 1 + quoted.length + 2;
            shown++;
          }
          const rest = out.slice(at);
          const listAfter = (id: string) =>
            `sluice message ls --json --include-body --since ${id} --as ${agent}`;
          endings.add(shown === ids.length ? 'all' : shown > 0 ? 'next' : 'too large');
          if (shown === ids.length) expect(rest).toBe('');
          else if (shown > 0) expect(rest).toBe(`next: ${listAfter(ids[shown - 1] as string)}\n`);
          else {
            const head = ids[0] as string;
            expect(rest).toBe(
              `${head} is too large to show here; read it: sluice message read ${head} --json --as ${agent}\nnext: ${listAfter(head)}\n`,
            );
          }
        },
      ),
      { numRuns: 60 },
    );
    expect([...endings].sort()).toEqual(['all', 'next', 'too large']);
  });

  it('refuses a body that is not well-formed Unicode before storing anything', async () => {
    await fc.assert(
      fc.asyncProperty(
        hostileBody.filter((b) => !isWellFormed(b)),
        async (body) => {
          const { agent } = await inboxWith([]);
          await expect(sendMessage(ctx, owner, { to: agent, body })).rejects.toMatchObject({
            code: 'invalid_params',
          });
          const r = await runCliInProcess(['message', 'ls', '--json', '--include-body', '--as', agent], {});
          expect(JSON.parse(r.stdout.toString('utf8'))).toEqual({ messages: [], next: null });
        },
      ),
      { numRuns: 10 },
    );
  });
});
