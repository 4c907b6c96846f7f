// Run specs in the store (src/host/agents/agent-runs.ts, migration 012) on SQLite and PostgreSQL: `agent
// run` adds the agent and settles it by turns, a lease gives each spec to one host of its machine
// and home, a lapsed lease passes to the next host, a report without the lease writes nothing, and
// the view reads a spec nobody holds as waiting for a host. Plus the CLI's lines and refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  agentRunStatus,
  agentRunsByName,
  claimRuns,
  controlAgentRun,
  registerAgentRun,
  releaseRuns,
  reportRun,
  thisMachine,
} from '../../src/host/agents/agent-runs.js';
import { resolvePrincipal } from '../../src/host/identity/principals.js';
import { claimAgentRuns, findAgentRun, upsertAgentRun } from '../../src/store/ops/agent-runs.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, type TestHost } from '../support/host.js';
import { snapshotStore } from '../support/store-snapshot.js';

describe.each(backendsUnderTest())('run specs (%s)', (backend) => {
  let h: ConformanceHost;
  beforeAll(async () => {
    h = await openConformanceHost(backend, 'runs');
  }, 60_000);
  afterAll(async () => h?.close());

  it('agent run adds a missing agent settling by turns, and switches an explicit one', async () => {
    const fresh = await registerAgentRun(h.ctx, h.owner, {
      name: 'newbie',
      driver: 'claude',
      cwd: '/w',
      args: [],
    });
    expect(fresh).toMatchObject({ created: true, settled: false });
    expect((await resolvePrincipal(h.ctx, 'newbie')).settlement).toBe('turn');
    await h.agent('old', 'explicit');
    const old = await registerAgentRun(h.ctx, h.owner, { name: 'old', driver: 'codex', cwd: '/w', args: [] });
    expect(old).toMatchObject({ created: false, settled: true });
    expect((await resolvePrincipal(h.ctx, 'old')).settlement).toBe('turn');
    const view = await agentRunStatus(h.ctx, h.owner, 'old');
    expect(view).toMatchObject({ driver: 'codex', cwd: '/w', desired: 'running', state: 'no-host' });
  });

  it('one host holds a spec at a time; a lapsed lease passes on; a report without the lease writes nothing', async () => {
    await registerAgentRun(h.ctx, h.owner, { name: 'leased', driver: 'claude', cwd: '/w', args: ['-x'] });
    const other = await h.sibling();
    const mine = await claimRuns(h.ctx, 'host-a', 60_000);
    expect(mine.map((r) => r.agent)).toContain('leased');
    expect(mine.find((r) => r.agent === 'leased')?.args).toEqual(['-x']);
    expect(await claimRuns(other, 'host-b', 60_000)).toEqual([]);
    const leased = mine.find((r) => r.agent === 'leased')!;
    await reportRun(other, 'host-b', leased.agentId, { state: 'running', pid: 1 });
    expect((await agentRunStatus(h.ctx, h.owner, 'leased'))?.state).toBe('stopped');
    await reportRun(h.ctx, 'host-a', leased.agentId, { state: 'running', pid: 42 });
    expect(await agentRunStatus(h.ctx, h.owner, 'leased')).toMatchObject({ state: 'running', pid: 42 });
    // host-a's lease lapses (it died): host-b takes the spec on its next claim.
    const later = new Date(Date.now() + 120_000).toISOString();
    const taken = await other.store.transaction((trx) =>
      claimAgentRuns(trx, {
        holder: 'host-b',
        machine: thisMachine(),
        home: h.ctx.home,
        now: later,
        until: later,
      }),
    );
    expect(taken.map((r) => r.name)).toContain('leased');
    // Another machine or home never takes it.
    const elsewhere = await other.store.transaction((trx) =>
      claimAgentRuns(trx, {
        holder: 'host-c',
        machine: 'other-box',
        home: h.ctx.home,
        now: later,
        until: later,
      }),
    );
    expect(elsewhere).toEqual([]);
    await releaseRuns(other, 'host-b');
    expect((await agentRunStatus(h.ctx, h.owner, 'leased'))?.state).toBe('no-host');
  });

  it('a run moved to another home or machine leaves its old host: the holder is cleared and no claim returns it', async () => {
    await registerAgentRun(h.ctx, h.owner, { name: 'mover', driver: 'claude', cwd: '/w', args: [] });
    const held = (await claimRuns(h.ctx, 'host-old', 60_000)).find((r) => r.agent === 'mover')!;
    await reportRun(h.ctx, 'host-old', held.agentId, { state: 'running', pid: 4242 });
    // Registered again for the same place: the host keeps it (and restarts it with the new spec).
    await registerAgentRun(h.ctx, h.owner, { name: 'mover', driver: 'claude', cwd: '/w2', args: [] });
    expect((await claimRuns(h.ctx, 'host-old', 60_000)).map((r) => r.agent)).toContain('mover');
    // `agent run` from a second home on the same store moves it: the old host no longer holds it,
    // even before its lease would have lapsed, and the new place's host may take it at once.
    const at = new Date().toISOString();
    await h.ctx.store.transaction((trx) =>
      upsertAgentRun(trx, {
        agent_id: held.agentId,
        driver: 'claude',
        cwd: '/w',
        args: '[]',
        machine: thisMachine(),
        home: '/another/home',
        created_by: h.owner.id,
        at,
      }),
    );
    const row = await findAgentRun(h.ctx.store.db, held.agentId);
    expect(row).toMatchObject({ holder: null, held_until: null, pid: null, state: 'stopped' });
    expect((await claimRuns(h.ctx, 'host-old', 60_000)).map((r) => r.agent)).not.toContain('mover');
    const other = await h.sibling();
    const taken = await other.store.transaction((trx) =>
      claimAgentRuns(trx, {
        holder: 'host-new',
        machine: thisMachine(),
        home: '/another/home',
        now: at,
        until: at,
      }),
    );
    expect(taken.map((r) => r.name)).toEqual(['mover']);
  });

  it('a claim returns only the runs of its own machine and home, whatever holder a row names', async () => {
    await registerAgentRun(h.ctx, h.owner, { name: 'stray', driver: 'claude', cwd: '/w', args: [] });
    const stray = await resolvePrincipal(h.ctx, 'stray');
    // A row held under this holder's name for another place (as a move used to leave it).
    await h.ctx.store.db
      .updateTable('agent_runs')
      .set({
        holder: 'host-mine',
        held_until: new Date(Date.now() + 60_000).toISOString(),
        home: '/not/mine',
      })
      .where('agent_id', '=', stray.id)
      .execute();
    expect((await claimRuns(h.ctx, 'host-mine', 60_000)).map((r) => r.agent)).not.toContain('stray');
    await h.ctx.store.db.deleteFrom('agent_runs').where('agent_id', '=', stray.id).execute();
  });

  it('stop, start and restart set what the supervisor reads; an agent without a spec is not_found', async () => {
    await registerAgentRun(h.ctx, h.owner, { name: 'ctl', driver: 'claude', cwd: '/w', args: [] });
    const seq = async () => (await claimRuns(h.ctx, 'host-ctl', 60_000)).find((r) => r.agent === 'ctl')!;
    const first = await seq();
    expect((await controlAgentRun(h.ctx, h.owner, 'ctl', 'stop')).desired).toBe('stopped');
    expect((await seq()).desired).toBe('stopped');
    await controlAgentRun(h.ctx, h.owner, 'ctl', 'start');
    expect((await seq()).restartSeq).toBe(first.restartSeq);
    await controlAgentRun(h.ctx, h.owner, 'ctl', 'restart');
    expect((await seq()).restartSeq).toBe(first.restartSeq + 1);
    await h.agent('bare');
    await expect(controlAgentRun(h.ctx, h.owner, 'bare', 'start')).rejects.toMatchObject({
      code: 'not_found',
    });
    expect((await agentRunsByName(h.ctx)).has('bare')).toBe(false);
    await releaseRuns(h.ctx, 'host-ctl');
    await releaseRuns(h.ctx, 'host-a');
  });
});

describe('sluice agent run | start | stop | ls (CLI, no host running)', { timeout: 60_000 }, () => {
  let h: TestHost;
  beforeAll(async () => {
    h = await openTestHost();
  });
  afterAll(async () => h.close());
  const cli = (...args: string[]) => runCliHere(args, { home: h.home });

  it('registers, says no host runs it yet, and agent ls shows it waiting', async () => {
    const run = await cli('agent', 'run', 'helper', '--driver', 'claude', '--cwd', h.home, '--no-wait');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(
      `added agent helper (settles by turns)\nhelper runs sluice drive claude in ${h.home}, supervised by sluice serve\n`,
    );
    const ls = await cli('agent', 'ls');
    expect(ls.stdout).toMatch(/^NAME\s+SETTLEMENT\s+RUN\s+CREATED$/m);
    expect(ls.stdout).toMatch(/^helper\s+turn\s+claude: waiting for sluice serve\s/m);
    const json = JSON.parse((await cli('agent', 'ls', '--json')).stdout) as { name: string; run: unknown }[];
    expect(json.find((a) => a.name === 'helper')?.run).toMatchObject({ state: 'no-host', driver: 'claude' });
    const stop = await cli('agent', 'stop', 'helper');
    expect(stop.stdout).toBe('helper is stopped (sluice agent start helper starts it again)\n');
    expect((await cli('agent', 'ls')).stdout).toMatch(/^helper\s+turn\s+claude: stopped\s/m);
  });

  it.each([
    [
      ['agent', 'run', 'x', '--driver', 'gemini', '--cwd', '.'],
      1,
      /^sluice: invalid_params: --driver must be claude or codex/,
    ],
    [
      ['agent', 'run', 'x', '--driver', 'codex', '--cwd', '.', '--', '--yolo'],
      1,
      /extra client arguments .* claude only/,
    ],
    [
      ['agent', 'run', 'x', '--driver', 'claude', '--cwd', '/no/such/dir'],
      1,
      /--cwd \/no\/such\/dir is not a folder/,
    ],
    [['agent', 'run', 'owner', '--driver', 'claude', '--cwd', '.'], 1, /owner is a person, not an agent/],
    [['agent', 'run', 'x', '--driver', 'claude'], 1, /required option '--cwd <dir>'/],
    [['agent', 'start', 'nobody'], 2, /^sluice: not_found: /],
    [['agent', 'start', 'owner'], 1, /^sluice: invalid_params: /],
  ])('%j is one line, exit %i, and changes nothing', async (args, code, pattern) => {
    const before = await snapshotStore(h.ctx);
    const run = await cli(...(args as string[]));
    expect(run.code).toBe(code);
    expect(run.stderr).toMatch(pattern);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });

  it('an agent the host does not run is not_found for start, with the command that registers it', async () => {
    await h.agent('plain');
    const run = await cli('agent', 'start', 'plain');
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'sluice: not_found: plain is not run by the host: register it with sluice agent run plain --driver claude|codex --cwd DIR\n',
    );
  });
});
