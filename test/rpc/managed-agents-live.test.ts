// An agent added from the CLI in another process appears on its owner's page at once (issue 23
// item 3): a channel-list subscriber is pushed `agent.managed {agent, managed}` when an agent is
// added or its managers change, saying whether the subscriber manages it now.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addAgentManager, removeAgentManager } from '../../src/host/agents/agent-managers.js';
import { runCli } from '../support/host.js';
import { type Json, openServedHost, type RpcClient, type ServedHost } from './support.js';

let h: ServedHost;
let owner: RpcClient;
let meg: RpcClient;
let eve: RpcClient;

const managedPush = (c: RpcClient, agent: string, managed: boolean) =>
  c.waitFor(
    (n) => n.method === 'agent.managed' && n.params.agent.name === agent && n.params.managed === managed,
  );

beforeAll(async () => {
  h = await openServedHost();
  await h.person('meg');
  await h.person('eve');
  owner = await h.client('owner');
  meg = await h.client('meg');
  eve = await h.client('eve');
  for (const c of [owner, meg, eve]) await c.ok('subscribe', { channelList: true });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('the agents a person manages, live', () => {
  it('an agent the owner adds from the CLI in another process is pushed to the owner as theirs', async () => {
    const cli = await runCli(['agent', 'add', 'cliagent'], { home: h.home });
    expect(cli.code, cli.stderr).toBe(0);
    const push = await managedPush(owner, 'cliagent', true);
    expect(push.params).toEqual({
      agent: { id: expect.any(String), name: 'cliagent', kind: 'agent' },
      managed: true,
    });
    // Names are public (principal.list); whether you manage it is yours: not meg's, not eve's.
    await managedPush(meg, 'cliagent', false);
    await managedPush(eve, 'cliagent', false);
  });

  it('a person made a manager hears it is theirs, and that it is not once removed', async () => {
    await addAgentManager(h.ctx, h.owner, 'cliagent', 'meg');
    await managedPush(meg, 'cliagent', true);
    await removeAgentManager(h.ctx, h.owner, 'cliagent', 'meg');
    await managedPush(meg, 'cliagent', false);
    expect(
      eve.notifications.filter((n) => n.method === 'agent.managed' && n.params.managed === true),
    ).toEqual([]);
  });

  it('a connection not subscribed to its channel list hears nothing of it', async () => {
    const quiet = await h.client('eve');
    await runCli(['agent', 'add', 'another'], { home: h.home });
    await managedPush(owner, 'another', true);
    expect(quiet.notifications.map((n: Json) => n.method)).not.toContain('agent.managed');
  });
});
