// Receipts every sender can see (issue 24 item 4): a message's state per recipient agent, read
// from the records the consumption rule writes. Each transition is driven through the real host
// APIs (send, dispatch, reads and their receipts, turns, archive, withdraw, reply) and the same
// states come back over the host call, JSON-RPC, MCP and the CLI.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSluiceError } from '../../src/core/errors.js';
import { addMember, createChannel, removeMember } from '../../src/host/channels/channels.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { editMessage } from '../../src/host/messages/edit-message.js';
import { type MessageStatus, readMessageStatus } from '../../src/host/messages/message-status.js';
import { replyToMessage, sendMessage } from '../../src/host/messages/messages.js';
import { archiveMessages } from '../../src/host/queue/inbox.js';
import { withdrawMessage } from '../../src/host/queue/queue.js';
import { channelRead } from '../../src/host/reads/index.js';
import {
  beginTurn,
  confirmSeen,
  confirmWritten,
  countDispatch,
  endTurn,
} from '../../src/host/turns/index.js';
import { handleRpcText } from '../../src/surfaces/rpc/dispatch.js';
import { DEFAULT_RPC_LIMITS } from '../../src/surfaces/rpc/methods.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { connectInMemory, type ToolCaller } from '../mcp/support.js';
import { runCli } from '../support/host.js';
import { snapshotStore } from '../support/store-snapshot.js';

let t: ConformanceHost;
let alice: Principal;
let bot: Principal;
let helper: Principal;
let aide: Principal;
let team: string;

describe.each(backendsUnderTest())('%s', (backend) => {
  beforeAll(async () => {
    t = await openConformanceHost(backend, 'msgstatus');
    alice = await t.person('alice');
    bot = await t.agent('bot', 'turn');
    helper = await t.agent('helper', 'turn');
    aide = await t.agent('aide', 'explicit');
    await t.person('mallory'); // an outsider: in no channel
    const nina = await t.person('nina'); // a non-member: in another channel only
    const rem = await t.person('rem'); // a removed member
    for (const agent of ['bot', 'helper', 'aide']) await t.manage(agent, 'alice'); // managers add agents
    team = (await createChannel(t.ctx, alice, { name: 'team', members: ['bot', 'helper', 'aide', 'rem'] }))
      .id;
    await createChannel(t.ctx, nina, { name: 'elsewhere', members: ['alice'] });
    await removeMember(t.ctx, alice, team, rem.name);
  });
  afterAll(async () => t?.close());

  const send = async (body: string, from: Principal = alice) =>
    (await sendMessage(t.ctx, from, { to: '#team', body })).message_id;

  async function states(id: string, as: Principal = alice): Promise<Record<string, string>> {
    const status = await readMessageStatus(t.ctx, as, id);
    return Object.fromEntries(status.recipients.map((r) => [r.agent, r.state]));
  }

  /** A read in the agent's open turn whose result reached the client (the transport confirmed it). */
  async function readWhole(agent: Principal, id: string): Promise<void> {
    const outcome = await channelRead(t.ctx, agent, { message_id: id });
    if (outcome.receipt) await confirmWritten(t.ctx, outcome.receipt);
  }

  describe('message status: the consumption rule’s states, per recipient agent', () => {
    it('a sent message is stored with every agent it was addressed to, and nobody else', async () => {
      const id = await send('stored only');
      expect(await states(id)).toEqual({ aide: 'stored', bot: 'stored', helper: 'stored' });
      const status = await readMessageStatus(t.ctx, alice, id);
      expect(status).toMatchObject({ messageId: id, channelId: team, recipientCount: 3 });
      expect(status.recipients.map((r) => r.agent)).toEqual(['aide', 'bot', 'helper']);
      expect(status.recipients.every((r) => r.reason === null && !Number.isNaN(Date.parse(r.since)))).toBe(
        true,
      );
    });

    it('offered by a delivery, received whole in a turn, then handled when the turn succeeds', async () => {
      const id = await send('walk me through it');
      await countDispatch(t.ctx, bot, [id]);
      expect((await states(id)).bot).toBe('offered');
      const turn = await beginTurn(t.ctx, bot);
      expect((await states(id)).bot).toBe('offered');
      await readWhole(bot, id);
      expect((await states(id)).bot).toBe('received');
      expect((await states(id)).helper).toBe('stored');
      await endTurn(t.ctx, bot, turn.id, { ok: true });
      expect((await states(id)).bot).toBe('handled');
    });

    it('a read whose result never reached the client is not received (I9): still stored', async () => {
      const id = await send('lost on the way');
      const turn = await beginTurn(t.ctx, helper);
      await channelRead(t.ctx, helper, { message_id: id }); // receipt never confirmed
      expect((await states(id)).helper).toBe('stored');
      await endTurn(t.ctx, helper, turn.id, { ok: true });
      expect((await states(id)).helper).toBe('stored');
    });

    it('a seen turn: offered when the page carries it, received once the driver saw it', async () => {
      const id = await send('seen by the driver');
      const turn = await beginTurn(t.ctx, helper, { receipt: 'seen' });
      const outcome = await channelRead(t.ctx, helper, { message_id: id });
      expect((await states(id)).helper).toBe('offered');
      expect(await confirmSeen(t.ctx, helper, turn.id, outcome.text)).toBe(true);
      expect((await states(id)).helper).toBe('received');
      // An edit after the read: the model never saw this version, and the status says so.
      await editMessage(t.ctx, alice, id, { body: 'seen by the driver, edited' });
      expect((await states(id)).helper).toBe('offered');
      await endTurn(t.ctx, helper, turn.id, { ok: true });
      expect((await states(id)).helper).toBe('stored');
    });

    it('a failed turn returns it with its reason; persons and the agent see the reason, other agents its kind', async () => {
      const id = await send('this will fail');
      const turn = await beginTurn(t.ctx, bot);
      await readWhole(bot, id);
      await endTurn(t.ctx, bot, turn.id, { ok: false, kind: 'model_error', reason: 'rate limited upstream' });
      const row = (as: Principal) =>
        readMessageStatus(t.ctx, as, id).then((s) => s.recipients.find((r) => r.agent === 'bot'));
      expect(await row(alice)).toMatchObject({
        state: 'returned',
        reason: 'model_error: rate limited upstream',
      });
      expect(await row(bot)).toMatchObject({
        state: 'returned',
        reason: 'model_error: rate limited upstream',
      });
      expect(await row(helper)).toMatchObject({ state: 'returned', reason: 'model_error' });
    });

    it('archived by the agent; withdrawn by its sender', async () => {
      const id = await send('archive or withdraw');
      await archiveMessages(t.ctx, aide, [id]);
      await withdrawMessage(t.ctx, alice, 'helper', id);
      expect(await states(id)).toEqual({ aide: 'archived', bot: 'stored', helper: 'withdrawn' });
    });

    it('answered: the agent sent a reply to it (reply_to), with the reply’s id', async () => {
      const id = await send('please answer');
      const reply = await replyToMessage(t.ctx, helper, id, { body: 'done' });
      const status = await readMessageStatus(t.ctx, alice, id);
      expect(status.recipients.find((r) => r.agent === 'helper')).toMatchObject({
        state: 'answered',
        replyId: reply.message_id,
      });
      // The reply went to bot and aide (not to its author): the first message is still stored there.
      expect((await states(id)).bot).toBe('stored');
      expect((await states(reply.message_id)).helper).toBeUndefined();
    });

    it('an agent’s own message: every other agent member is a recipient', async () => {
      const id = await send('from the bot', bot);
      expect(await states(id, alice)).toEqual({ aide: 'stored', helper: 'stored' });
    });

    it('a member added later is not a recipient of what was sent before', async () => {
      const id = await send('before the newcomer');
      await t.agent('late');
      await t.manage('late', 'alice');
      await addMember(t.ctx, alice, team, 'late');
      expect(Object.keys(await states(id))).toEqual(['aide', 'bot', 'helper']);
      await removeMember(t.ctx, alice, team, 'late');
    });
  });

  describe('message status: who may see', () => {
    let waiting: string;
    beforeAll(async () => {
      waiting = await send('who may see this');
    });

    it('any current member may: the author, another agent member', async () => {
      expect(Object.keys(await states(waiting, alice))).toHaveLength(3);
      expect(Object.keys(await states(waiting, aide))).toHaveLength(3);
    });

    for (const who of ['mallory', 'nina', 'rem']) {
      it(`${who} (outsider / non-member / removed member) is refused with not_member and nothing changes`, async () => {
        const caller = await import('../../src/host/identity/principals.js').then((m) =>
          m.resolvePrincipal(t.ctx, who),
        );
        const before = await snapshotStore(t.ctx);
        const err = await readMessageStatus(t.ctx, caller, waiting).catch((e: unknown) => e);
        expect(isSluiceError(err) && err.code).toBe('not_member');
        expect(await snapshotStore(t.ctx)).toEqual(before);
      });
    }

    it('an unknown id is not_found in one line', async () => {
      const err = await readMessageStatus(t.ctx, alice, 'm_nope').catch((e: unknown) => e);
      expect(isSluiceError(err) && err.code).toBe('not_found');
      expect(isSluiceError(err) && err.message).not.toContain('\n');
    });
  });

  describe('message status: every surface returns the same states', () => {
    let id: string;
    let expected: MessageStatus;
    let mcp: ToolCaller;
    beforeAll(async () => {
      id = await send('same everywhere');
      const turn = await beginTurn(t.ctx, bot);
      await readWhole(bot, id);
      await endTurn(t.ctx, bot, turn.id, { ok: false, kind: 'client_exit', reason: 'exit 1' });
      await archiveMessages(t.ctx, aide, [id]);
      await replyToMessage(t.ctx, helper, id, { body: 'on it' });
      expected = await readMessageStatus(t.ctx, alice, id);
      mcp = await connectInMemory(t.ctx, aide);
    });
    afterAll(async () => mcp?.close());

    const rpc = async (as: Principal, params: unknown) =>
      JSON.parse(
        (await handleRpcText(
          { ctx: t.ctx, principal: as, limits: DEFAULT_RPC_LIMITS },
          JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message.status', params }),
        )) ?? 'null',
      );

    it('the fixture holds returned, archived and answered', () => {
      expect(expected.recipients.map((r) => [r.agent, r.state])).toEqual([
        ['aide', 'archived'],
        ['bot', 'returned'],
        ['helper', 'answered'],
      ]);
    });

    it('RPC message.status', async () => {
      expect((await rpc(alice, { message_id: id })).result).toEqual(expected);
    });

    it('RPC: strict params and bad ids answer one line with a code', async () => {
      const unknown = await rpc(alice, { message_id: id, extra: 1 });
      expect(unknown.error.data.code).toBe('invalid_params');
      expect(unknown.error.message).toContain('extra');
      expect((await rpc(alice, {})).error.data.code).toBe('invalid_params');
      expect((await rpc(alice, { message_id: 'm_nope' })).error.data.code).toBe('not_found');
      expect((await rpc(await t.person('rpc-outsider'), { message_id: id })).error.data.code).toBe(
        'not_member',
      );
    });

    it('MCP message_status (as an agent member: the reason text is not its own, so only the kind)', async () => {
      const got = await mcp.call('message_status', { message_id: id });
      expect(got.isError).toBe(false);
      const asAide = await readMessageStatus(t.ctx, aide, id);
      expect(got.json).toEqual({ ...asAide });
      expect(got.json.recipients.map((r: { state: string }) => r.state)).toEqual(
        expected.recipients.map((r) => r.state),
      );
      expect(got.json.recipients[1].reason).toBe('client_exit');
      expect(got.text.length).toBeLessThanOrEqual(t.ctx.limits.toolOutputUnits);
    });

    it('MCP: unknown argument and bad id answer one error line with a code', async () => {
      const bad = await mcp.call('message_status', { message_id: id, x: 1 });
      expect(bad.isError).toBe(true);
      expect(bad.json.error.code).toBe('invalid_params');
      const missing = await mcp.call('message_status', { message_id: 'm_nope' });
      expect(missing.json.error.code).toBe('not_found');
    });

    it('CLI message status --json and the table', async () => {
      const json = await runCli(['message', 'status', id, '--json', '--as', 'alice'], {
        home: t.home,
        env: t.db ? { SLUICE_DB: t.db } : {},
      });
      expect(json.stderr).toBe('');
      expect(JSON.parse(json.stdout)).toEqual(expected.recipients);
      const table = await runCli(['message', 'status', id, '--as', 'alice'], {
        home: t.home,
        env: t.db ? { SLUICE_DB: t.db } : {},
      });
      const lines = table.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^AGENT\s+STATE\s+SINCE\s+REASON$/);
      expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 2))).toEqual(
        expected.recipients.map((r) => [r.agent, r.state]),
      );
      expect(lines[2]).toContain('client_exit: exit 1');
    });

    it('CLI: a bad id and a non-member answer one line with a code, exit non-zero', async () => {
      const missing = await runCli(['message', 'status', 'm_nope', '--as', 'alice'], {
        home: t.home,
        env: t.db ? { SLUICE_DB: t.db } : {},
      });
      expect(missing.code).toBeGreaterThan(0);
      expect(missing.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(missing.stderr).toContain('not_found');
      const outsider = await runCli(['message', 'status', id, '--as', 'mallory'], {
        home: t.home,
        env: t.db ? { SLUICE_DB: t.db } : {},
      });
      expect(outsider.code).toBeGreaterThan(0);
      expect(outsider.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(outsider.stderr).toContain('not_member');
    });
  });
});
