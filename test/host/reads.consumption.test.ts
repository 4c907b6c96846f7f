import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isSluiceError } from '../../src/core/errors.js';
import { addMember, createChannel, removeMember } from '../../src/host/channels/channels.js';
import type { HostContext } from '../../src/host/identity/context.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { editMessage } from '../../src/host/messages/edit-message.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { archiveMessages } from '../../src/host/queue/inbox.js';
import { type ChannelReadParams, channelRead, type ReadOutcome } from '../../src/host/reads/index.js';
import { beginTurn, confirmSeen, confirmWritten, endTurn } from '../../src/host/turns/index.js';
import { withBudget } from '../mcp/support.js';
import { openTestHost, type TestHost } from '../support/host.js';

// A model of consumption (I3, I9) and membership (I6) checked after every step of random
// interleavings of sends, page reads, fragment chains, turns, archives, edits and leaving. Any
// read's reply may be lost on its way to the client (connection dropped, host killed, a result
// the driven client never showed): a lost reply counts for nothing, and the client never holds
// the cursor it carried. Turns are `written` (the transport confirms) or `seen` (a driver
// confirms the exact text it saw in the client's stream; an altered text confirms nothing).

const BUDGET = 1_500;
const CHANNELS = ['a', 'b'] as const;
type ChannelName = (typeof CHANNELS)[number];

interface ModelMessage {
  id: string;
  channel: ChannelName;
  revision: number;
  /** The agent was a member when it was sent, so it has an inbox entry. */
  inInbox: boolean;
  pending: boolean;
}

interface Coverage {
  revision: number;
  prefix: number;
  complete: boolean;
}

interface Chain {
  id: string;
  revision: number;
  cursor: string;
  /** Where the next fragment starts. */
  next: number;
}

interface Model {
  messages: ModelMessage[];
  member: Record<ChannelName, boolean>;
  turn: { id: string; coverage: Map<string, Coverage> } | null;
  chains: Chain[];
}

interface Real {
  t: TestHost;
  ctx: HostContext;
  bot: Principal;
  alice: Principal;
  channelIds: Record<ChannelName, string>;
}

type Cmd = fc.AsyncCommand<Model, Real>;

const visiblePending = (m: Model) => m.messages.filter((x) => x.pending && m.member[x.channel]);
const byId = (m: Model, id: string) => m.messages.find((x) => x.id === id) as ModelMessage;

/** Records a slice the model received, with the contiguous-prefix rule of DESIGN.md §3.1. */
function cover(m: Model, id: string, offset: number, end: number, total: number): void {
  if (!m.turn) return;
  const revision = byId(m, id).revision;
  const prior = m.turn.coverage.get(id);
  if (prior?.complete && prior.revision === revision) return;
  if (offset === 0 || (prior && prior.revision === revision && prior.prefix === offset)) {
    m.turn.coverage.set(id, { revision, prefix: end, complete: end >= total });
  }
}

/** How a read's reply travels: handed over whole, lost on the way, or (seen turns) shown altered. */
type Fate = 'delivered' | 'lost' | 'altered';

/** Hands a read's reply to the client (or loses it); true when the client got it whole. */
async function hand(r: Real, outcome: ReadOutcome<unknown>, fate: Fate): Promise<boolean> {
  if (fate === 'lost') return false;
  const receipt = outcome.receipt;
  if (receipt?.rule === 'written') {
    // An altered text cannot happen on a transport that wrote the reply whole: it is delivered.
    await confirmWritten(r.ctx, receipt);
    return true;
  }
  if (receipt?.rule === 'seen') {
    const shown = fate === 'altered' ? `${outcome.text.slice(0, -1)} ` : outcome.text;
    expect(await confirmSeen(r.ctx, r.bot, receipt.turnId, shown)).toBe(fate === 'delivered');
    return fate === 'delivered';
  }
  return fate === 'delivered';
}

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    if (isSluiceError(err)) return err.code;
    throw err;
  }
}

/** A step that checks the invariants after it acts. */
abstract class Step implements Cmd {
  abstract check(m: Model): boolean;
  abstract act(m: Model, r: Real): Promise<void>;
  async run(m: Model, r: Real): Promise<void> {
    await this.act(m, r);
    await checkInvariants(m, r);
  }
}

class Send extends Step {
  constructor(
    readonly channel: ChannelName,
    readonly size: number,
  ) {
    super();
  }
  check = () => true;
  async act(m: Model, r: Real) {
    const body = `${this.channel}:${'é😀x"\n'.repeat(Math.ceil(this.size / 6))}`;
    const { message_id } = await sendMessage(r.ctx, r.alice, { to: r.channelIds[this.channel], body });
    const inInbox = m.member[this.channel];
    m.messages.push({ id: message_id, channel: this.channel, revision: 1, inInbox, pending: inInbox });
  }
  override toString = () => `send(${this.channel}, ${this.size})`;
}

class PageRead extends Step {
  constructor(
    readonly channel: ChannelName | null,
    readonly limit: number,
    readonly pages: number,
    readonly fate: Fate,
  ) {
    super();
  }
  check = (m: Model) => this.channel === null || m.member[this.channel];
  async act(m: Model, r: Real) {
    const args: ChannelReadParams = { limit: this.limit, unread: true };
    if (this.channel) args.channel_id = r.channelIds[this.channel];
    const expected = visiblePending(m)
      .filter((x) => this.channel === null || x.channel === this.channel)
      .map((x) => x.id);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < this.pages; i++) {
      const outcome = await channelRead(r.ctx, r.bot, cursor ? { ...args, cursor } : args);
      const { value, text } = outcome;
      expect(text.length).toBeLessThanOrEqual(BUDGET);
      if (!('messages' in value)) throw new Error('expected a page');
      // Only the last page of the walk meets the step's fate; a lost page ends the walk.
      const received = await hand(r, outcome, i === this.pages - 1 ? this.fate : 'delivered');
      for (const p of value.messages) {
        if (received) cover(m, p.message_id, 0, JSON.stringify(p).length, JSON.stringify(p).length);
        seen.push(p.message_id);
      }
      if (value.readContent) seen.push(value.readContent.message_id);
      if (!received || !value.nextCursor) break;
      cursor = value.nextCursor;
    }
    // FIFO over the channels the agent belongs to now, nothing else (I6, I7).
    expect(seen).toEqual(expected.slice(0, seen.length));
  }
  override toString = () =>
    `page(${this.channel ?? '*'}, limit ${this.limit}, ${this.pages} page(s), last ${this.fate})`;
}

class HistoryRead extends Step {
  constructor(
    readonly channel: ChannelName,
    readonly limit: number,
    readonly fate: Fate,
  ) {
    super();
  }
  check = (m: Model) => m.member[this.channel];
  async act(m: Model, r: Real) {
    const outcome = await channelRead(r.ctx, r.bot, {
      channel_id: r.channelIds[this.channel],
      limit: this.limit,
    });
    const { value, text } = outcome;
    expect(text.length).toBeLessThanOrEqual(BUDGET);
    if (!('messages' in value)) throw new Error('expected a page');
    // History shows every message of the channel, newest first; the ones returned whole count too.
    const expected = m.messages
      .filter((x) => x.channel === this.channel)
      .map((x) => x.id)
      .reverse();
    const seen = value.messages.map((p) => p.message_id);
    if (value.readContent) seen.push(value.readContent.message_id);
    expect(seen).toEqual(expected.slice(0, seen.length));
    if (!(await hand(r, outcome, this.fate))) return;
    for (const p of value.messages)
      cover(m, p.message_id, 0, JSON.stringify(p).length, JSON.stringify(p).length);
  }
  override toString = () => `history(${this.channel}, limit ${this.limit}, ${this.fate})`;
}

class FragmentStart extends Step {
  constructor(
    readonly pick: number,
    readonly fate: Fate,
  ) {
    super();
  }
  check = (m: Model) => m.messages.length > 0;
  async act(m: Model, r: Real) {
    const msg = m.messages[this.pick % m.messages.length] as ModelMessage;
    if (!m.member[msg.channel]) {
      expect(await codeOf(channelRead(r.ctx, r.bot, { message_id: msg.id }))).toBe('not_member');
      return;
    }
    const outcome = await channelRead(r.ctx, r.bot, { message_id: msg.id });
    const { value, text } = outcome;
    expect(text.length).toBeLessThanOrEqual(BUDGET);
    if (!(await hand(r, outcome, this.fate))) return;
    if ('messages' in value) {
      const whole = JSON.stringify(value.messages[0]).length;
      cover(m, msg.id, 0, whole, whole);
      return;
    }
    expect(value.offset).toBe(0);
    cover(m, msg.id, 0, value.fragment.length, value.total);
    if (value.contentCursor) {
      m.chains.push({
        id: msg.id,
        revision: msg.revision,
        cursor: value.contentCursor,
        next: value.fragment.length,
      });
    }
  }
  override toString = () => `fragmentStart(#${this.pick}, ${this.fate})`;
}

class FragmentContinue extends Step {
  constructor(
    readonly pick: number,
    readonly keepOld: boolean,
    readonly fate: Fate,
  ) {
    super();
  }
  check = (m: Model) => m.chains.length > 0;
  async act(m: Model, r: Real) {
    const index = this.pick % m.chains.length;
    const chain = m.chains[index] as Chain;
    const msg = byId(m, chain.id);
    const read = channelRead(r.ctx, r.bot, { message_id: chain.id, content_cursor: chain.cursor });
    if (!m.member[msg.channel]) {
      expect(await codeOf(read)).toBe('not_member');
      return;
    }
    if (msg.revision !== chain.revision) {
      expect(await codeOf(read)).toBe('invalid_cursor');
      m.chains.splice(index, 1);
      return;
    }
    const outcome = await read;
    const { value, text } = outcome;
    expect(text.length).toBeLessThanOrEqual(BUDGET);
    if ('messages' in value) throw new Error('expected a fragment');
    expect(value.offset).toBe(chain.next);
    // A lost fragment leaves the chain where it was: the client never got the next cursor.
    if (!(await hand(r, outcome, this.fate))) return;
    cover(m, chain.id, value.offset, value.offset + value.fragment.length, value.total);
    // keepOld replays this cursor later (skipping back); otherwise the chain moves on.
    if (this.keepOld) return;
    if (value.contentCursor) {
      chain.cursor = value.contentCursor;
      chain.next = value.offset + value.fragment.length;
    } else m.chains.splice(index, 1);
  }
  override toString = () =>
    `fragmentContinue(#${this.pick}${this.keepOld ? ', replayable' : ''}, ${this.fate})`;
}

class BeginTurn extends Step {
  constructor(readonly receipt: 'written' | 'seen') {
    super();
  }
  check = () => true;
  async act(m: Model, r: Real) {
    const turn = await beginTurn(r.ctx, r.bot, { receipt: this.receipt });
    m.turn = { id: turn.id, coverage: new Map() };
  }
  override toString = () => `beginTurn(${this.receipt})`;
}

class EndTurn extends Step {
  constructor(readonly ok: boolean) {
    super();
  }
  check = (m: Model) => m.turn !== null;
  async act(m: Model, r: Real) {
    const turn = m.turn as NonNullable<Model['turn']>;
    const settled = await endTurn(
      r.ctx,
      r.bot,
      turn.id,
      this.ok ? { ok: true } : { ok: false, kind: 'model_error' },
    );
    const consumed = m.messages
      .filter((x) => {
        const c = turn.coverage.get(x.id);
        return x.pending && c?.complete && c.revision === x.revision;
      })
      .map((x) => x.id);
    expect([...(this.ok ? settled.handled : settled.returned)].sort()).toEqual([...consumed].sort());
    expect(this.ok ? settled.returned : settled.handled).toEqual([]);
    if (this.ok) for (const id of consumed) byId(m, id).pending = false;
    m.turn = null;
  }
  override toString = () => `endTurn(${this.ok ? 'ok' : 'failed'})`;
}

class Archive extends Step {
  constructor(readonly pick: number) {
    super();
  }
  check = (m: Model) => m.messages.length > 0;
  async act(m: Model, r: Real) {
    const msg = m.messages[this.pick % m.messages.length] as ModelMessage;
    const code = await codeOf(archiveMessages(r.ctx, r.bot, [msg.id]));
    // An entry of a channel the agent left stays pending, hidden, until it rejoins (I3, I6).
    const expected = !msg.inInbox ? 'not_found' : m.member[msg.channel] ? undefined : 'not_member';
    expect(code).toBe(expected);
    if (expected === undefined || !msg.inInbox) msg.pending = false;
  }
  override toString = () => `archive(#${this.pick})`;
}

class Edit extends Step {
  constructor(readonly pick: number) {
    super();
  }
  check = (m: Model) => m.messages.length > 0;
  async act(m: Model, r: Real) {
    const msg = m.messages[this.pick % m.messages.length] as ModelMessage;
    msg.revision += 1;
    await editMessage(r.ctx, r.alice, msg.id, {
      body: `${msg.channel}: edited ${msg.revision} ${'w'.repeat(msg.revision * 300)}`,
    });
  }
  override toString = () => `edit(#${this.pick})`;
}

class Membership extends Step {
  constructor(readonly channel: ChannelName) {
    super();
  }
  check = () => true;
  async act(m: Model, r: Real) {
    if (m.member[this.channel]) await removeMember(r.ctx, r.alice, r.channelIds[this.channel], 'bot');
    else await addMember(r.ctx, r.alice, r.channelIds[this.channel], 'bot');
    m.member[this.channel] = !m.member[this.channel];
  }
  override toString = () => `toggleMembership(${this.channel})`;
}

/** After every step: exactly the modelled messages are pending, in FIFO order (I3). */
async function checkInvariants(m: Model, r: Real): Promise<void> {
  const rows = await r.ctx.store.db
    .selectFrom('inbox')
    .select('message_id')
    .where('agent_id', '=', r.bot.id)
    .where('state', 'in', ['waiting', 'returned'])
    .orderBy('position')
    .execute();
  expect(rows.map((x) => x.message_id)).toEqual(m.messages.filter((x) => x.pending).map((x) => x.id));
}

const channel = fc.constantFrom(...CHANNELS);
const fate = fc.oneof(
  { weight: 4, arbitrary: fc.constant<Fate>('delivered') },
  { weight: 2, arbitrary: fc.constant<Fate>('lost') },
  { weight: 1, arbitrary: fc.constant<Fate>('altered') },
);
const send = fc
  .tuple(channel, fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1_500, max: 5_000 })))
  .map(([c, size]) => new Send(c, size));
const page = fc
  .tuple(
    fc.option(channel, { nil: null }),
    fc.integer({ min: 1, max: 6 }),
    fc.integer({ min: 1, max: 3 }),
    fate,
  )
  .map(([c, limit, pages, f]) => new PageRead(c, limit, pages, f));
const history = fc
  .tuple(channel, fc.integer({ min: 1, max: 6 }), fate)
  .map(([c, limit, f]) => new HistoryRead(c, limit, f));
const fragmentStart = fc.tuple(fc.nat(), fate).map(([n, f]) => new FragmentStart(n, f));
const fragmentContinue = fc
  .tuple(
    fc.nat(),
    fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    fate,
  )
  .map(([n, keep, f]) => new FragmentContinue(n, keep, f));
const begin = fc.constantFrom('written' as const, 'seen' as const).map((receipt) => new BeginTurn(receipt));
const end = fc.boolean().map((ok) => new EndTurn(ok));
// Repeating an arbitrary weights it: sends, reads, fragments and turns are the interesting mix.
const commands = fc.commands(
  [
    send,
    send,
    send,
    page,
    page,
    history,
    fragmentStart,
    fragmentStart,
    fragmentContinue,
    fragmentContinue,
    fragmentContinue,
    fragmentContinue,
    begin,
    begin,
    end,
    end,
    end,
    fc.nat().map((n) => new Archive(n)),
    fc.nat().map((n) => new Edit(n)),
    channel.map((c) => new Membership(c)),
  ],
  { maxCommands: 60, size: 'large' },
);

describe('consumption model (I3, I6, I9)', () => {
  it('random interleavings keep exactly the unconsumed messages pending', async () => {
    await fc.assert(
      fc.asyncProperty(commands, async (cmds) => {
        const t = await openTestHost();
        try {
          const bot = await t.agent('bot', 'turn');
          const alice = await t.person('alice');
          await t.manage('bot', 'alice'); // only its managers add an agent to a group
          const channelIds = {} as Record<ChannelName, string>;
          for (const name of CHANNELS)
            channelIds[name] = (await createChannel(t.ctx, alice, { name, members: ['bot'] })).id;
          const real: Real = { t, ctx: await withBudget(t.ctx, BUDGET), bot, alice, channelIds };
          const model: Model = { messages: [], member: { a: true, b: true }, turn: null, chains: [] };
          await fc.asyncModelRun(() => ({ model, real }), cmds);
        } finally {
          await t.close();
        }
      }),
      { numRuns: 50 },
    );
  }, 300_000);
});
