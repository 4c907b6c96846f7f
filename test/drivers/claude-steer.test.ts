// The Claude driver's steering against a stand-in `claude -p --input-format stream-json`: a steer
// reaches only the turn it names, only while that turn runs, and the turn ends with the last
// result after every steered message was echoed (the real client: test/e2e/drive-steer.e2e.test.ts).
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import type { RenderedDelivery } from '../../src/core/envelope.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { beginTurn, type ClientSaw, type ClientTurn } from '../../src/host/turns/index.js';
import { startClaudeClient } from '../../src/surfaces/drivers/claude.js';
import type { DriverClient, TurnRequest } from '../../src/surfaces/drivers/loop.js';
import { prepareDriver } from '../../src/surfaces/drivers/setup.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { eventually } from './drive-harness.js';

// Echoes each user message as Claude Code does with --replay-user-messages, logs what it got, and
// ends the turn with a `result` once a message says "end-turn".
const FAKE_CLAUDE = `#!${process.execPath}
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
const say = (v) => process.stdout.write(JSON.stringify(v) + '\\n');
for await (const line of createInterface({ input: process.stdin })) {
  const msg = JSON.parse(line);
  if (msg.type === 'control_request') {
    say({ type: 'control_response', response: { subtype: 'success', request_id: msg.request_id, response: {} } });
    continue;
  }
  const texts = msg.message.content.filter((b) => b.type === 'text').map((b) => b.text);
  appendFileSync('received.txt', texts.join(' ') + '\\n');
  say({ type: 'user', parent_tool_use_id: null, message: { role: 'user', content: texts.map((text) => ({ type: 'text', text })) } });
  if (texts.some((t) => t.includes('end-turn'))) say({ type: 'result', subtype: 'success', is_error: false, result: 'done' });
}
`;

const delivery = (text: string): RenderedDelivery => ({
  text,
  included: [],
  overflow: 0,
  oversizedHead: null,
  totalPending: 0,
});

describe('steering a running Claude turn', () => {
  let h: TestHost;
  let bot: Principal;
  let cwd: string;
  let client: DriverClient;
  beforeEach(async () => {
    h = await openTestHost();
    bot = await h.agent('bot', 'turn');
    cwd = mkdtempSync(join(tmpdir(), 'sluice-fake-claude-'));
    const bin = join(cwd, 'claude');
    writeFileSync(bin, FAKE_CLAUDE);
    chmodSync(bin, 0o755);
    const setup = await prepareDriver(h.ctx, bot, { entry: '/nonexistent/sluice.js', cwd });
    client = await startClaudeClient(h.ctx, bot, setup, { bin, cwd, extraArgs: [] });
  });
  afterEach(async () => {
    await client.stop();
    await h.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  /** What the client reported its model saw, per turn id. */
  const seen = new Map<string, ClientSaw[]>();
  const turnOf = (id: string): ClientTurn => ({
    id,
    saw: (what) => seen.set(id, [...(seen.get(id) ?? []), what]),
    waitOnPerson: () => {},
    personAnswered: () => {},
  });
  const request = (turnId: string, text: string): TurnRequest => ({
    turn: turnOf(turnId),
    delivery: delivery(text),
    delivered: [],
  });
  const received = () => readFileSync(join(cwd, 'received.txt'), 'utf8').trim().split('\n');

  test('only into the running turn it names, and not once that turn has ended', async () => {
    const turn = await beginTurn(h.ctx, bot, { receipt: 'seen' });
    const running = client.runTurn(request(turn.id, 'first'));
    const steer = client.steer?.bind(client);
    if (!steer) throw new Error('the Claude client steers');
    // The turn runs once its message reached the client.
    await eventually(async () => (existsSync(join(cwd, 'received.txt')) ? true : undefined), 10_000);
    expect(await steer(request('t_another', 'for another turn'))).toBe(false);
    expect(await steer(request(turn.id, 'steered'))).toBe(true);
    expect(await steer(request(turn.id, 'steered, end-turn'))).toBe(true);
    expect(await running).toEqual({ ok: true });
    expect(await steer(request(turn.id, 'too late'))).toBe(false);
    expect(received()).toEqual(['first', 'steered', 'steered, end-turn']);
    // Each steer counts once its echo shows the model took it in, reported as data.
    expect(seen.get(turn.id)).toEqual([
      { kind: 'user_message', text: 'steered' },
      { kind: 'user_message', text: 'steered, end-turn' },
    ]);
    expect(seen.has('t_another')).toBe(false);
  });
});
