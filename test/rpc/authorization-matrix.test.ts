// Authorization before commit (issue 12): every JSON-RPC method and every CLI command that acts on
// a channel, a message or a queue, called by an outsider, a non-member and a removed member, is
// refused — and the store is byte-for-byte what it was (a snapshot of every table and counter).
// The table has a row for every RPC method: a method added without one fails here.
// docs/security.md, "Who may do what", states the rules this table checks.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addAgentManager, removeAgentManager } from '../../src/host/agents/agent-managers.js';
import { controlAgentRun, registerAgentRun } from '../../src/host/agents/agent-runs.js';
import { decideApprovalRequest } from '../../src/host/approvals/decisions.js';
import { requestApproval } from '../../src/host/approvals/requests.js';
import { listRulesOf } from '../../src/host/approvals/rules.js';
import type { ApprovalAsk } from '../../src/host/approvals/subject.js';
import { createChannel, removeMember } from '../../src/host/channels/channels.js';
import { acceptInvitation } from '../../src/host/channels/invitations.js';
import { nowIso } from '../../src/host/identity/context.js';
import { type Principal, resolvePrincipal } from '../../src/host/identity/principals.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { transitionEntry } from '../../src/host/queue/inbox.js';
import { findInboxEntry } from '../../src/store/ops/inbox.js';
import { findMessageById } from '../../src/store/ops/messages.js';
import { buildProgram } from '../../src/surfaces/cli/main.js';
import { handleRpcText } from '../../src/surfaces/rpc/dispatch.js';
import { DEFAULT_RPC_LIMITS, type SubscriptionControl } from '../../src/surfaces/rpc/methods.js';
import { PARAMS } from '../../src/surfaces/rpc/schemas.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { snapshotStore } from '../support/store-snapshot.js';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect reply JSON field by field.
type Json = any;

/** The fixture every row refers to. */
interface Fixture {
  team: string;
  /** alice's message in #team, waiting in helper's queue. */
  waiting: string;
  /** alice's earlier message in #team, returned (the blocking card). */
  returned: string;
  /** A pending approval request of helper's (docs/approvals.md). */
  approval: string;
  /** An "allow always" rule of helper's. */
  rule: string;
}

const bashAsk = (command: string): ApprovalAsk => ({
  client: 'claude',
  kind: 'tool',
  subject: { tool: 'Bash', input: { command } },
  turnId: null,
});

type Caller = 'outsider' | 'non-member' | 'removed member';
const CALLERS: Record<Caller, string> = {
  // A person in no channel at all.
  outsider: 'mallory',
  // A person in another channel (with alice), sharing none with helper and not in #team.
  'non-member': 'nina',
  // A person who was in #team (so shared it with helper) and was removed.
  'removed member': 'rem',
};

/** Refused: the call fails and changes nothing. Open: anyone may, and it touches only their own. */
type Outcome = 'refused' | 'open';
type RpcRow = [method: string, label: string, params: (f: Fixture) => unknown, outcome: Outcome];

const RPC_TABLE: RpcRow[] = [
  ['host.hello', 'says who you are', () => ({}), 'open'],
  ['queue.summary', "helper's summary", () => ({ agent: 'helper' }), 'refused'],
  ['queue.page', "helper's cards", () => ({ agent: 'helper' }), 'refused'],
  ['queue.read', 'a card body', (f) => ({ agent: 'helper', messageId: f.waiting }), 'refused'],
  ['queue.pause', "pause helper's queue", () => ({ agent: 'helper', reason: 'x' }), 'refused'],
  ['queue.resume', "unpause helper's queue", () => ({ agent: 'helper' }), 'refused'],
  [
    'queue.resume',
    'resume the blocking card',
    (f) => ({ agent: 'helper', messageId: f.returned }),
    'refused',
  ],
  ['queue.withdraw', 'withdraw a card', (f) => ({ agent: 'helper', messageId: f.waiting }), 'refused'],
  [
    'queue.edit',
    'edit a card',
    (f) => ({ agent: 'helper', messageId: f.waiting, body: 'changed' }),
    'refused',
  ],
  ['channel.list', 'list your own channels', () => ({}), 'open'],
  ['principal.list', 'list names and kinds of principals', () => ({}), 'open'],
  ['principal.addAgent', 'add an agent (owner only)', () => ({ name: 'sneaky' }), 'refused'],
  ['agent.status', "helper's run state and log", () => ({ agent: 'helper' }), 'refused'],
  ['agent.start', 'start helper', () => ({ agent: 'helper' }), 'refused'],
  ['agent.stop', 'stop helper', () => ({ agent: 'helper' }), 'refused'],
  ['agent.restart', 'restart helper', () => ({ agent: 'helper' }), 'refused'],
  ['agent.connect', "helper's connect commands", () => ({ agent: 'helper' }), 'refused'],
  ['channel.create', 'create a channel naming nobody', () => ({ name: 'mine', members: [] }), 'open'],
  [
    'channel.create',
    'create a channel naming helper (not theirs to add)',
    () => ({ name: 'mine', members: ['helper'] }),
    'refused',
  ],
  [
    'channel.addMember',
    'add yourself to #team',
    (f) => ({ channelId: f.team, member: 'mallory' }),
    'refused',
  ],
  ['channel.removeMember', 'remove bob from #team', (f) => ({ channelId: f.team, member: 'bob' }), 'refused'],
  ['channel.leave', 'leave #team', (f) => ({ channel_id: f.team }), 'refused'],
  ['channel.invitations', 'list your own invitations', () => ({}), 'open'],
  ['channel.accept', 'join #team uninvited', (f) => ({ channel_id: f.team }), 'refused'],
  ['channel.decline', 'decline #team uninvited', (f) => ({ channel_id: f.team }), 'refused'],
  ['channel.block', "refuse alice's invitations", () => ({ name: 'alice' }), 'open'],
  ['channel.unblock', 'lift a block you never made', () => ({ name: 'alice' }), 'open'],
  ['channel.blocked', 'list whom you block', () => ({}), 'open'],
  ['channel.history', "read #team's history", (f) => ({ channelId: f.team }), 'refused'],
  ['channel.members', "list #team's members", (f) => ({ channelId: f.team }), 'refused'],
  ['message.send', 'post into #team by id', (f) => ({ to: f.team, body: 'hi' }), 'refused'],
  ['message.send', 'post into #team by name', () => ({ to: '#team', body: 'hi' }), 'refused'],
  [
    'message.send',
    "reply in #team's thread from a DM",
    (f) => ({ to: 'helper', body: 'hi', reply_to: f.waiting }),
    'refused',
  ],
  ['message.edit', "edit alice's message", (f) => ({ messageId: f.waiting, body: 'changed' }), 'refused'],
  ['message.read', "read alice's message", (f) => ({ messageId: f.waiting }), 'refused'],
  ['message.markRead', "mark alice's message read", (f) => ({ messageId: f.waiting }), 'refused'],
  ['message.status', "where alice's message stands", (f) => ({ message_id: f.waiting }), 'refused'],
  ['approval.list', 'list the requests you may decide (none)', () => ({}), 'open'],
  ['approval.list', "helper's approval requests", () => ({ agent: 'helper' }), 'refused'],
  ['approval.decide', "allow helper's request", (f) => ({ id: f.approval, decision: 'allow' }), 'refused'],
  ['approval.decide', "deny helper's request", (f) => ({ id: f.approval, decision: 'deny' }), 'refused'],
  ['approval.rules', "helper's allow-always rules", () => ({ agent: 'helper' }), 'refused'],
  ['approval.rule.revoke', "revoke helper's rule", (f) => ({ id: f.rule }), 'refused'],
  ['subscribe', "watch helper's queue", () => ({ queues: ['helper'] }), 'refused'],
  ['subscribe', 'watch #team', (f) => ({ channels: [f.team] }), 'refused'],
  ['unsubscribe', 'drop your own subscriptions', () => ({ queues: ['helper'] }), 'open'],
];

/** CLI commands that act on a channel, a message or a queue (`--as` the caller). */
const CLI_TABLE: [label: string, args: (f: Fixture) => string[]][] = [
  ['channel add', () => ['channel', 'add', '#team', 'mallory']],
  ['channel add (an agent)', () => ['channel', 'add', '#team', 'helper']],
  ['channel create (naming an agent)', () => ['channel', 'create', 'mine', '--members', 'helper']],
  ['channel remove', () => ['channel', 'remove', '#team', 'bob']],
  ['channel leave', () => ['channel', 'leave', '#team']],
  ['channel accept', () => ['channel', 'accept', '#team']],
  ['channel decline', () => ['channel', 'decline', '#team']],
  ['channel history', () => ['channel', 'history', '#team']],
  ['channel members', () => ['channel', 'members', '#team']],
  ['message send', () => ['message', 'send', '#team', '-m', 'hi']],
  ['message reply', (f) => ['message', 'reply', f.waiting, '-m', 'hi']],
  ['message read', (f) => ['message', 'read', f.waiting]],
  ['message archive', (f) => ['message', 'archive', f.waiting]],
  ['message status', (f) => ['message', 'status', f.waiting]],
  ['queue summary', () => ['queue', 'summary', 'helper']],
  ['queue ls', () => ['queue', 'ls', 'helper']],
  ['queue pause', () => ['queue', 'pause', 'helper']],
  ['queue resume', () => ['queue', 'resume', 'helper']],
  ['queue resume (card)', (f) => ['queue', 'resume', 'helper', f.returned]],
  ['queue withdraw', (f) => ['queue', 'withdraw', 'helper', f.waiting]],
];

/** Pausing or resuming the whole queue: sharing a channel with the agent is not enough. */
const PAUSE_CALLERS: Record<string, string> = {
  outsider: 'mallory',
  'non-member': 'nina',
  'person who merely DMs the agent': 'dee',
  'member who shares #team with the agent': 'bob',
  'removed manager': 'rita',
};
/**
 * Adding an agent to a group (naming it in a new one, or adding it): its managers and the owner
 * only (access.ts requireAgentAdder). The same callers as pausing, plus the removed member.
 */
const AGENT_ADD_CALLERS: Record<string, string> = { ...PAUSE_CALLERS, 'removed member': 'rem' };
const AGENT_ADD_RPC: [method: string, params: (f: Fixture) => unknown][] = [
  ['channel.create', () => ({ name: 'with-helper', members: ['helper'] })],
  ['channel.create', () => ({ name: 'with-helper', members: ['bob', 'helper'] })],
  ['channel.addMember', (f) => ({ channelId: f.team, member: 'helper' })],
];
const AGENT_ADD_CLI: ((f: Fixture) => string[])[] = [
  () => ['channel', 'create', 'with-helper', '--members', 'helper'],
  () => ['channel', 'add', '#team', 'helper'],
];
const PAUSE_RPC: [method: string, params: unknown][] = [
  ['queue.pause', { agent: 'helper', reason: 'x' }],
  ['queue.resume', { agent: 'helper' }],
];
const PAUSE_CLI: string[][] = [
  ['queue', 'pause', 'helper'],
  ['queue', 'resume', 'helper'],
];

/**
 * A host-run agent (docs/agents.md) is controlled by the owner and its managers only: not by
 * members who share a channel with it, a removed manager, nor the agent itself.
 */
const RUN_CALLERS: Record<string, string> = { ...PAUSE_CALLERS, 'the agent itself': 'helper' };
const RUN_RPC: [method: string, params: unknown][] = [
  ['agent.status', { agent: 'helper' }],
  ['agent.start', { agent: 'helper' }],
  ['agent.stop', { agent: 'helper' }],
  ['agent.restart', { agent: 'helper' }],
  ['agent.connect', { agent: 'helper' }],
];
/** Approvals (docs/approvals.md): the owner and the agent's managers only; never the agent itself. */
const APPROVAL_RPC: [method: string, params: (f: Fixture) => unknown][] = [
  ['approval.list', () => ({ agent: 'helper' })],
  ['approval.decide', (f) => ({ id: f.approval, decision: 'allow', always: true })],
  ['approval.decide', (f) => ({ id: f.approval, decision: 'deny', note: 'no' })],
  ['approval.rules', () => ({ agent: 'helper' })],
  ['approval.rule.revoke', (f) => ({ id: f.rule })],
];
const APPROVAL_CLI: ((f: Fixture) => string[])[] = [
  () => ['approval', 'ls', '--agent', 'helper'],
  (f) => ['approval', 'allow', f.approval],
  (f) => ['approval', 'answer', f.approval, 'blue'],
  (f) => ['approval', 'deny', f.approval, '--note', 'no'],
  () => ['approval', 'rules', 'helper'],
  (f) => ['approval', 'rules', 'helper', '--revoke', f.rule],
];
/** Names the rows in test titles (the real fixture exists only once the tests run). */
const LABEL_FIXTURE: Fixture = {
  team: '#team',
  waiting: 'MSG',
  returned: 'MSG',
  approval: 'APR',
  rule: 'RULE',
};
const RUN_CLI: string[][] = [
  ['agent', 'run', 'helper', '--driver', 'codex', '--cwd', '.', '--no-wait'],
  ['agent', 'start', 'helper', '--no-wait'],
  ['agent', 'stop', 'helper', '--no-wait'],
  ['agent', 'restart', 'helper', '--no-wait'],
  ['agent', 'forget', 'helper'],
];

describe('every RPC method has a row in the authorization table', () => {
  it('names each method of src/surfaces/rpc/schemas.ts', () => {
    const covered = new Set(RPC_TABLE.map(([method]) => method));
    expect(Object.keys(PARAMS).filter((m) => !covered.has(m))).toEqual([]);
  });
});

describe.each(backendsUnderTest())('authorization before commit (%s)', (backend) => {
  let h: ConformanceHost;
  let f: Fixture;
  const principals = new Map<string, Principal>();
  const subscribed: unknown[] = [];

  beforeAll(async () => {
    h = await openConformanceHost(backend, 'authz');
    const alice = await h.person('alice');
    await h.person('bob');
    for (const name of Object.values(CALLERS)) await h.person(name);
    const helper = await h.agent('helper');
    // Whole-queue pause and resume take more than a shared channel (access.ts mayManageAgent):
    // dee merely DMs helper; meg manages it (and DMs it); rita managed it and was removed (and
    // stays in #team). Their DMs come first, so they are older than #team's cards.
    for (const name of ['dee', 'meg', 'rita']) await h.person(name);
    await sendMessage(h.ctx, await resolvePrincipal(h.ctx, 'dee'), { to: 'helper', body: 'dee only' });
    await sendMessage(h.ctx, await resolvePrincipal(h.ctx, 'meg'), { to: 'helper', body: 'meg only' });
    await addAgentManager(h.ctx, h.owner, 'helper', 'meg');
    await addAgentManager(h.ctx, h.owner, 'helper', 'rita');
    await removeAgentManager(h.ctx, await resolvePrincipal(h.ctx, 'meg'), 'helper', 'rita');
    // Only its managers add an agent to a group: alice manages helper while she makes #team.
    await addAgentManager(h.ctx, h.owner, 'helper', 'alice');
    const team = await createChannel(h.ctx, alice, {
      name: 'team',
      members: ['bob', 'helper', 'rem', 'rita'],
    });
    await removeAgentManager(h.ctx, h.owner, 'helper', 'alice');
    // People a person names are invited (consent): they accept, so they are members.
    for (const name of ['bob', 'rem', 'rita'])
      await acceptInvitation(h.ctx, await resolvePrincipal(h.ctx, name), team.id);
    const elsewhere = await createChannel(h.ctx, alice, { name: 'elsewhere', members: ['nina'] });
    await acceptInvitation(h.ctx, await resolvePrincipal(h.ctx, 'nina'), elsewhere.id);
    // The oldest card: alice's DM with helper, which nobody else may see.
    await sendMessage(h.ctx, alice, { to: 'helper', body: 'alice only, in the DM' });
    const returned = await sendMessage(h.ctx, alice, { to: '#team', body: 'first, failed' });
    const waiting = await sendMessage(h.ctx, alice, { to: '#team', body: 'second, waiting' });
    await h.ctx.store.transaction(async (trx) => {
      const message = await findMessageById(trx, returned.message_id);
      const entry = message && (await findInboxEntry(trx, helper.id, message.seq));
      if (!entry) throw new Error('no entry');
      await transitionEntry(trx, entry, 'returned', nowIso(h.ctx), { failure_kind: 'crash' });
    });
    await removeMember(h.ctx, alice, team.id, 'rem');
    // A pending approval request of helper's, and a rule made by allowing another one always.
    const approval = await requestApproval(h.ctx, helper, bashAsk('touch pending'), 600_000);
    const ruled = await requestApproval(h.ctx, helper, bashAsk('npm test'), 600_000);
    await decideApprovalRequest(h.ctx, h.owner, { id: ruled.row.id, decision: 'allow', always: true });
    const [rule] = await listRulesOf(h.ctx, h.owner, 'helper');
    f = {
      team: team.id,
      waiting: waiting.message_id,
      returned: returned.message_id,
      approval: approval.row.id,
      rule: rule?.id ?? '',
    };
    // helper is run by the host (stopped, so no supervisor would start it anyway).
    await registerAgentRun(h.ctx, h.owner, { name: 'helper', driver: 'claude', cwd: h.home, args: [] });
    await controlAgentRun(h.ctx, h.owner, 'helper', 'stop');
    await h.person('oscar');
    for (const name of [
      ...Object.values(CALLERS),
      ...Object.values(PAUSE_CALLERS),
      'oscar',
      'bob',
      'owner',
      'helper',
    ]) {
      principals.set(name, await resolvePrincipal(h.ctx, name));
    }
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  const subscriptions: SubscriptionControl = {
    subscribe: (queues, channels) => subscribed.push({ queues, channels }),
    unsubscribe: () => undefined,
    subscribeChannelList: async () => undefined,
    unsubscribeChannelList: () => undefined,
    list: () => ({ queues: [], channels: [], channelList: false }),
  };

  async function rpc(caller: string, method: string, params: unknown): Promise<Json> {
    const principal = principals.get(caller);
    if (!principal) throw new Error(`no principal ${caller}`);
    const reply = await handleRpcText(
      { ctx: h.ctx, principal, limits: DEFAULT_RPC_LIMITS, subscriptions },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    );
    return JSON.parse(reply ?? 'null');
  }

  for (const [method, label, params, outcome] of RPC_TABLE) {
    for (const [who, name] of Object.entries(CALLERS)) {
      if (outcome === 'refused') {
        it(`rpc ${method} (${label}): the ${who} is refused and nothing changes`, async () => {
          const before = await snapshotStore(h.ctx);
          const reply = await rpc(name, method, params(f));
          expect(reply.result, JSON.stringify(reply.result)).toBeUndefined();
          expect(['denied', 'not_member', 'not_found']).toContain(reply.error?.data?.code);
          expect(reply.raw ?? JSON.stringify(reply)).not.toContain('second, waiting');
          expect(await snapshotStore(h.ctx)).toEqual(before);
          expect(subscribed).toEqual([]);
        });
      } else if (method !== 'channel.create' && method !== 'channel.block') {
        it(`rpc ${method} (${label}): open to the ${who}, showing nothing of #team and changing nothing`, async () => {
          const before = await snapshotStore(h.ctx);
          const reply = await rpc(name, method, params(f));
          expect(reply.error).toBeUndefined();
          expect(JSON.stringify(reply.result)).not.toContain(f.team);
          expect(await snapshotStore(h.ctx)).toEqual(before);
        });
      }
    }
  }

  it('rpc channel.create is open to anyone and touches only the new channel', async () => {
    // oscar, not one of the callers above: his own channel, naming a person (invited).
    const before = await snapshotStore(h.ctx);
    const reply = await rpc('oscar', 'channel.create', { name: 'oscars', members: ['bob'] });
    expect(reply.result).toMatchObject({ name: 'oscars', joined: ['oscar'], invited: ['bob'] });
    const after = await snapshotStore(h.ctx);
    for (const table of ['inbox', 'messages', 'queues', 'principals']) {
      expect(after[table], table).toEqual(before[table]);
    }
  });

  it('rpc channel.block is open to anyone and touches only their own blocks (nobody else is told)', async () => {
    const before = await snapshotStore(h.ctx);
    const reply = await rpc('oscar', 'channel.block', { name: 'alice' });
    expect(reply.result).toEqual({ name: 'alice', blocked: true, dropped: 0 });
    const after = await snapshotStore(h.ctx);
    for (const [table, rows] of Object.entries(after)) {
      if (table !== 'invitation_blocks') expect(rows, table).toEqual(before[table]);
    }
    expect(after.invitation_blocks).toHaveLength((before.invitation_blocks?.length ?? 0) + 1);
    expect((await rpc('oscar', 'channel.unblock', { name: 'alice' })).result.unblocked).toBe(true);
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });

  async function cli(caller: string, args: string[]): Promise<number> {
    const saved = process.exitCode;
    process.exitCode = undefined;
    const db = h.db ? ['--db', h.db] : [];
    const program = await buildProgram();
    // The refusal line is kept, not printed into the test run, and must be one line.
    const printed: string[] = [];
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    });
    try {
      await program.parseAsync(['node', 'sluice', '--home', h.home, ...db, '--as', caller, ...args]);
    } catch {
      process.exitCode = 1; // a usage error (commander)
    } finally {
      stderr.mockRestore();
    }
    const code = Number(process.exitCode ?? 0);
    process.exitCode = saved;
    if (code > 0) expect(printed.join('')).toMatch(/^(sluice|error): [^\n]+\n?$/);
    return code;
  }

  for (const [label, args] of CLI_TABLE) {
    for (const [who, name] of Object.entries(CALLERS)) {
      it(`cli ${label}: the ${who} is refused (exit 1 or 2) and nothing changes`, async () => {
        const before = await snapshotStore(h.ctx);
        expect(await cli(name, args(f))).toBeGreaterThan(0);
        expect(await snapshotStore(h.ctx)).toEqual(before);
      });
    }
  }

  for (const [method, params] of AGENT_ADD_RPC) {
    for (const [who, name] of Object.entries(AGENT_ADD_CALLERS)) {
      it(`rpc ${method} (adding helper): the ${who} is refused with one line and nothing changes`, async () => {
        const before = await snapshotStore(h.ctx);
        const reply = await rpc(name, method, params(f));
        expect(reply.result, JSON.stringify(reply.result)).toBeUndefined();
        // Not in #team: not_member before anything else; otherwise the agent rule.
        const expected =
          method === 'channel.addMember' && name !== 'bob' && name !== 'rita' ? 'not_member' : 'denied';
        expect(reply.error?.data?.code).toBe(expected);
        expect(reply.error?.message).not.toContain('\n');
        expect(await snapshotStore(h.ctx)).toEqual(before);
      });
    }
  }
  for (const args of AGENT_ADD_CLI) {
    for (const [who, name] of Object.entries(AGENT_ADD_CALLERS)) {
      it(`cli ${args(LABEL_FIXTURE).join(' ')}: the ${who} is refused and nothing changes`, async () => {
        const before = await snapshotStore(h.ctx);
        expect(await cli(name, args(f))).toBe(2);
        expect(await snapshotStore(h.ctx)).toEqual(before);
      });
    }
  }
  it('the owner and a manager add helper to a group (RPC and CLI)', async () => {
    principals.set('meg', await resolvePrincipal(h.ctx, 'meg'));
    const made = await rpc('meg', 'channel.create', { name: 'megs', members: ['helper'] });
    expect(made.result).toMatchObject({ name: 'megs', joined: ['meg', 'helper'], invited: [] });
    expect(await cli('owner', ['channel', 'create', 'owners', '--members', 'helper'])).toBe(0);
    expect((await rpc('meg', 'channel.leave', { channel_id: made.result.id })).result.left).toBe(true);
    await removeMember(h.ctx, h.owner, '#owners', 'helper');
    expect(await cli('owner', ['channel', 'add', '#owners', 'helper'])).toBe(0);
  });

  for (const [method, params] of PAUSE_RPC) {
    for (const [who, name] of Object.entries(PAUSE_CALLERS)) {
      it(`rpc ${method} (whole queue): the ${who} is refused and nothing changes`, async () => {
        const before = await snapshotStore(h.ctx);
        const reply = await rpc(name, method, params);
        expect(reply.result, JSON.stringify(reply.result)).toBeUndefined();
        expect(reply.error?.data?.code).toBe('denied');
        expect(await snapshotStore(h.ctx)).toEqual(before);
      });
    }
  }
  for (const args of PAUSE_CLI) {
    for (const [who, name] of Object.entries(PAUSE_CALLERS)) {
      it(`cli ${args.join(' ')}: the ${who} is refused and nothing changes`, async () => {
        const before = await snapshotStore(h.ctx);
        expect(await cli(name, args)).toBeGreaterThan(0);
        expect(await snapshotStore(h.ctx)).toEqual(before);
      });
    }
  }

  for (const [method, params] of RUN_RPC) {
    for (const [who, name] of Object.entries(RUN_CALLERS)) {
      it(`rpc ${method} (host-run agent): the ${who} is refused and nothing changes`, async () => {
        const before = await snapshotStore(h.ctx);
        const reply = await rpc(name, method, params);
        expect(reply.result, JSON.stringify(reply.result)).toBeUndefined();
        expect(reply.error?.data?.code).toBe('denied');
        expect(await snapshotStore(h.ctx)).toEqual(before);
      });
    }
  }
  for (const args of RUN_CLI) {
    for (const [who, name] of Object.entries(RUN_CALLERS)) {
      it(`cli ${args.slice(0, 2).join(' ')}: the ${who} is refused and nothing changes`, async () => {
        const before = await snapshotStore(h.ctx);
        expect(await cli(name, args)).toBeGreaterThan(0);
        expect(await snapshotStore(h.ctx)).toEqual(before);
      });
    }
  }

  for (const [method, params] of APPROVAL_RPC) {
    for (const [who, name] of Object.entries(RUN_CALLERS)) {
      it(`rpc ${method} (approvals): the ${who} is refused and nothing changes`, async () => {
        const before = await snapshotStore(h.ctx);
        const reply = await rpc(name, method, params(f));
        expect(reply.result, JSON.stringify(reply.result)).toBeUndefined();
        expect(reply.error?.data?.code).toBe('denied');
        expect(await snapshotStore(h.ctx)).toEqual(before);
      });
    }
  }
  for (const args of APPROVAL_CLI) {
    for (const [who, name] of Object.entries(RUN_CALLERS)) {
      it(`cli ${args(LABEL_FIXTURE).join(' ')}: the ${who} is refused and nothing changes`, async () => {
        const before = await snapshotStore(h.ctx);
        expect(await cli(name, args(f))).toBeGreaterThan(0);
        expect(await snapshotStore(h.ctx)).toEqual(before);
      });
    }
  }

  it('the owner and a manager may read, start and stop a host-run agent', async () => {
    principals.set('meg', await resolvePrincipal(h.ctx, 'meg'));
    for (const who of ['owner', 'meg']) {
      const started = await rpc(who, 'agent.start', { agent: 'helper' });
      expect(started.result?.run, JSON.stringify(started)).toMatchObject({
        desired: 'running',
        driver: 'claude',
      });
      const stopped = await rpc(who, 'agent.stop', { agent: 'helper' });
      expect(stopped.result?.run.desired).toBe('stopped');
      const status = await rpc(who, 'agent.status', { agent: 'helper' });
      expect(status.result).toMatchObject({ agent: 'helper', run: { state: 'stopped' } });
      const connect = await rpc(who, 'agent.connect', { agent: 'helper' });
      expect(connect.result.claude.map((c: { id: string }) => c.id)).toEqual(['run', 'hooks', 'mcp']);
    }
    expect(await cli('meg', ['agent', 'start', 'helper', '--no-wait'])).toBe(0);
    expect(await cli('meg', ['agent', 'stop', 'helper', '--no-wait'])).toBe(0);
  });

  it('the agent itself, the owner and a manager may pause and resume the whole queue', async () => {
    principals.set('helper', await resolvePrincipal(h.ctx, 'helper'));
    principals.set('meg', await resolvePrincipal(h.ctx, 'meg'));
    // The owner shares no channel with helper: the reply's summary shows no message id.
    for (const who of ['helper', 'owner', 'meg']) {
      const paused = await rpc(who, 'queue.pause', { agent: 'helper', reason: who });
      expect(paused.result?.summary.paused, JSON.stringify(paused)).toBe(true);
      const resumed = await rpc(who, 'queue.resume', { agent: 'helper' });
      expect(resumed.result?.summary.paused, JSON.stringify(resumed)).toBe(false);
    }
    expect(
      (await rpc('owner', 'queue.pause', { agent: 'helper' })).result.summary.newestPersonMessageId,
    ).toBe(null);
    expect(await cli('meg', ['queue', 'resume', 'helper'])).toBe(0);
    expect(await cli('helper', ['queue', 'pause', 'helper'])).toBe(0);
    expect(await cli('owner', ['queue', 'resume', 'helper'])).toBe(0);
    // queue.summary says who may: the manager and the agent, not a member or a DM-er.
    const canPause = async (who: string) =>
      (await rpc(who, 'queue.summary', { agent: 'helper' })).result?.canPause;
    expect(await canPause('meg')).toBe(true);
    expect(await canPause('helper')).toBe(true);
    expect(await canPause('bob')).toBe(false);
    expect(await canPause('dee')).toBe(false);
    expect(await canPause('rita')).toBe(false);
  });

  it('the members themselves may (the refusals are about the caller)', async () => {
    expect((await rpc('bob', 'queue.summary', { agent: 'helper' })).result.newestPersonMessageId).toBe(
      f.waiting,
    );
    expect((await rpc('bob', 'channel.history', { channelId: f.team })).result).toBeDefined();
    expect(await cli('bob', ['queue', 'summary', 'helper'])).toBe(0);
    // bob's card list holds only #team's cards: the DM card is not his, even as the oldest.
    const written: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: string, done?: () => void) => {
      written.push(String(chunk));
      done?.();
      return true;
    }) as typeof process.stdout.write);
    try {
      expect(await cli('bob', ['queue', 'ls', 'helper', '--limit', '1'])).toBe(0);
    } finally {
      spy.mockRestore();
    }
    expect(written.join('')).toContain(f.returned);
    expect(written.join('')).not.toContain('alice only');
    // A member may resume the blocking card (per card), but not pause the whole queue.
    expect((await rpc('bob', 'queue.pause', { agent: 'helper' })).error?.data?.code).toBe('denied');
  });
});
