import { openSync, writeSync } from 'node:fs';
import { isSluiceError } from '../src/core/errors.js';
import { openHost } from '../src/host/home.js';
import { archiveMessages, listInbox } from '../src/host/inbox.js';
import { sendMessage } from '../src/host/messages.js';
import { resolvePrincipal } from '../src/host/principals.js';
import { channelRead } from '../src/host/reads.js';
import { beginTurn, endTurn, receivedInProcess } from '../src/host/turns/index.js';

// One crash-campaign worker: random send / read / fragment / turn / archive operations against
// one home, appending to an operation log *before* each risky step (intent) and *after* each
// acknowledged one. The parent SIGKILLs it at a random moment and checks the store against the log.

const [home, logPath, seedText, agentName, agentCountText] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const agentCount = Number(agentCountText);
let seed = Number(seedText) >>> 0 || 1;
function rand(n: number): number {
  seed = (seed * 1664525 + 1013904223) >>> 0;
  return seed % n;
}
const log = openSync(logPath, 'a');
const note = (line: string) => writeSync(log, `${line}\n`);

// Lone surrogates are refused at send (text is stored exactly or refused), so none here.
const HOSTILE = ['😀', '中文', '\u0000', '"', '\\', '\u2028', '\n[sluice] fake header\n', '</sluice>', 'é'];
function body(): string {
  const size = rand(10) === 0 ? 20_000 + rand(30_000) : 1 + rand(400);
  let out = '';
  while (out.length < size) out += rand(4) === 0 ? (HOSTILE[rand(HOSTILE.length)] as string) : 'lorem ipsum ';
  return out;
}

const ctx = await openHost({ home });
const owner = await resolvePrincipal(ctx, 'owner');
// Each worker owns the turns of one agent (as a driver would); sends go to any agent.
const bot = await resolvePrincipal(ctx, agentName);
process.stdout.write('ready\n');

let turnId: string | undefined;
for (;;) {
  try {
    await step(rand(10));
  } catch (err) {
    // Refusals are part of the workload (another worker abandoned our turn, archived our pick…).
    if (!isSluiceError(err)) throw err;
    note(`refused ${err.code}`);
    if (err.code === 'conflict') turnId = undefined;
  }
}

async function step(op: number): Promise<void> {
  if (op < 4) {
    // 1-4 sends at once, as a host serving concurrent clients: they commit as one group (group
    // commit), and each is logged as sent only when its own promise resolves.
    const sends = Array.from({ length: 1 + rand(4) }, async () => {
      const to = `bot${rand(agentCount)}`;
      const sent = await sendMessage(ctx, owner, { to, body: body() });
      note(`sent ${sent.message_id} ${to}`);
    });
    for (const outcome of await Promise.allSettled(sends))
      if (outcome.status === 'rejected') throw outcome.reason;
  } else if (op < 5) {
    if (turnId) {
      const ok = rand(3) > 0;
      note(`ending ${ok ? 'ok' : 'failed'} ${turnId}`);
      await endTurn(ctx, bot, turnId, ok ? { ok: true } : { ok: false, kind: 'model_error' });
    }
    turnId = (await beginTurn(ctx, bot)).id;
    note(`turn ${turnId}`);
  } else if (op < 7) {
    // This process is the client: it holds each result the moment the read returns.
    const read = await receivedInProcess(ctx, await channelRead(ctx, bot, { limit: 1 + rand(10) }));
    const value = read.value as { messages?: { message_id: string }[] };
    for (const m of value.messages ?? []) note(`received ${turnId ?? 'peek'} ${m.message_id}`);
  } else if (op < 8) {
    const [first] = await listInbox(ctx, bot, { limit: 1 + rand(5) });
    if (first) {
      // Walk a fragment chain; stop early now and then (an incomplete chain must not count).
      const id = first.projection.message_id;
      let r = await receivedInProcess(ctx, await channelRead(ctx, bot, { message_id: id }));
      let value = r.value as { complete?: boolean; contentCursor?: string | null; messages?: unknown };
      while (value.complete === false && value.contentCursor && rand(8) > 0) {
        r = await receivedInProcess(
          ctx,
          await channelRead(ctx, bot, { message_id: id, content_cursor: value.contentCursor }),
        );
        value = r.value as typeof value;
      }
      if (value.complete === true || value.messages !== undefined) note(`received ${turnId ?? 'peek'} ${id}`);
    }
  } else {
    const pending = await listInbox(ctx, bot, { limit: 3 });
    const ids = pending.map((p) => p.projection.message_id).slice(0, 1 + rand(2));
    if (ids.length > 0) {
      for (const id of ids) note(`archiving ${id}`);
      await archiveMessages(ctx, bot, ids);
    }
  }
}
