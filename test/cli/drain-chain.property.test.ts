import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../../proof/fuzz-cli.js';
import type { HostContext } from '../../src/host/identity/context.js';
import { addPrincipal, type Principal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { hostilePiece, hostileString } from '../core/arbitraries.js';
import { drainAsModel, SHELLS, type ShellClient } from './drain-model.js';
import { useInProcessCliHome } from './in-process-home.js';

// Issue 26: a drain as the delivery asks for it — handle what the model holds and run the next
// listing in the same command — never prints more than the client's shell-output cap in one
// command, for hostile bodies and subjects: the envelope's receipts with the first page, each
// page's receipts with the page its `next` names (sized by the `--max-bytes` it carries). Pages
// are filled to the cap: a body that does not fit whole is split across pages (CJK, emoji and
// escapes at the split points); its parts join to the stored body exactly, and it is handled
// only once its last part has been printed — no listing consumes anything (drain-model.ts checks
// the inbox after every command). Every command runs for real in this process (handle
// archives), in Claude Code's or Codex's shell environment.

type Client = ShellClient;

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
  const cli = useInProcessCliHome();
  let ctx: HostContext;
  let owner: Principal;
  let agents = 0;
  beforeAll(() => {
    ({ ctx, owner } = cli);
  });

  it('envelope receipts + first page, page receipts + next page: each within the cap, bodies split across pages joined exactly and handled only whole', async () => {
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
          const run = await drainAsModel(ctx, bot, client, new Map(sent.map((m) => [m.id, m.body])));
          for (const shape of run.shapes) shapes.add(shape);
          const seen = run.handled;
          // Lossless and FIFO: every body once, whole, in order; the inbox is empty.
          expect(seen).toEqual(sent);
          const left = await runCliInProcess(['message', 'ls', '--json', '--as', agent], SHELLS[client]);
          expect(JSON.parse(left.stdout.toString('utf8'))).toEqual([]);
        },
      ),
      { numRuns: 30 },
    );
    // Envelopes, heads over the hook's cap, and bodies split across pages (first and later parts).
    expect([...shapes]).toEqual(
      expect.arrayContaining(['envelope', 'head list', 'first part', 'later part']),
    );
  });
});
