// The agent lock (DESIGN.md §8 I8): what a model's pre-approved `sluice …` may do. Pure checks of
// the rule, then the attacks from issue 11 through the driver's real shim and the built CLI.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { initHome, openHost } from '../../src/host/home.js';
import { sendMessage } from '../../src/host/messages.js';
import { addPrincipal } from '../../src/host/principals.js';
import {
  AGENT_LOCK_ENV,
  type AgentLock,
  agentLockFrom,
  encodeAgentLock,
  enforceAgentLock,
  isBroadFolder,
  readAttachment,
} from '../../src/surfaces/cli/agent-lock.js';
import { prepareDriver } from '../../src/surfaces/drivers/setup.js';
import { planClaudeInstall } from '../../src/surfaces/hooks/install-claude.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { runCliHere } from '../support/cli-in-process.js';
import { SLUICE_BIN } from '../support/host.js';

const lock: AgentLock = { agent: 'bot', home: '/srv/sluice', attachRoots: ['/work/project'] };
const noEnv = {};

function refusal(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (err instanceof SluiceError) return err.code;
    throw err;
  }
}

describe('under an agent lock the CLI', () => {
  it.each([
    ['message send'],
    ['message ls'],
    ['message read'],
    ['message reply'],
    ['message archive'],
    ['delivery'],
    ['wait'],
    ['mcp'],
  ])('runs the agent command `%s` as the locked agent on the locked store', (command) => {
    expect(enforceAgentLock(lock, { command }, noEnv)).toEqual({
      as: 'bot',
      home: '/srv/sluice',
      db: undefined,
    });
  });

  it.each([
    ['channel create'],
    ['channel ls'],
    ['channel accept'],
    ['channel block'],
    ['channel unblock'],
    ['token'],
    ['agent add'],
    ['agent settle'],
    ['person add'],
    ['serve'],
    ['hooks install'],
    ['queue pause'],
    ['queue withdraw'],
    ['turn end'],
    ['drive claude'],
    ['init'],
    ['media gc'],
    // An agent never sees or decides approval requests, its own included (docs/approvals.md).
    ['approval ls'],
    ['approval allow'],
    ['approval answer'],
    ['approval deny'],
    ['approval rules'],
    ['approval policy'],
  ])('refuses `%s`, which is not the agent’s own inbox work', (command) => {
    expect(refusal(() => enforceAgentLock(lock, { command }, noEnv))).toBe('denied');
  });

  it.each([
    ['--as owner', { as: 'owner' }, noEnv],
    ['--as alice', { as: 'alice' }, noEnv],
    ['--home elsewhere', { home: '/tmp/other-home' }, noEnv],
    ['--db another file', { db: '/tmp/other.db' }, noEnv],
    ['--db postgres', { db: 'postgres://postgres@127.0.0.1:5432/test' }, noEnv],
    ['SLUICE_AS=owner', {}, { SLUICE_AS: 'owner' }],
    ['SLUICE_HOME elsewhere', {}, { SLUICE_HOME: '/tmp/other-home' }],
    ['SLUICE_DB elsewhere', {}, { SLUICE_DB: '/tmp/other.db' }],
  ])('refuses %s with denied', (_name, flags, env) => {
    expect(refusal(() => enforceAgentLock(lock, { command: 'message ls', ...flags }, env))).toBe('denied');
  });

  it('accepts overrides that only repeat the locked values (the hooks pass --as and --home)', () => {
    const env = { SLUICE_AS: 'bot', SLUICE_HOME: '/srv/sluice/', SLUICE_DB: '/srv/sluice/sluice.db' };
    const flags = { as: 'bot', home: '/srv/sluice', db: '/srv/sluice/./sluice.db' };
    expect(enforceAgentLock(lock, { command: 'message reply', ...flags }, env).as).toBe('bot');
    const pg = { ...lock, db: 'postgres://h/db' };
    expect(enforceAgentLock(pg, { command: 'message ls', db: 'postgres://h/db' }, noEnv).db).toBe(
      'postgres://h/db',
    );
    expect(
      refusal(() => enforceAgentLock(pg, { command: 'message ls', db: 'postgres://h/other' }, noEnv)),
    ).toBe('denied');
  });

  it('reads the lock from the environment and fails closed on a malformed one', () => {
    expect(agentLockFrom({})).toBeUndefined();
    expect(agentLockFrom({ [AGENT_LOCK_ENV]: encodeAgentLock(lock) })).toEqual({ ...lock, db: undefined });
    for (const bad of ['{', '{}', '{"agent":"bot","home":"relative"}', '{"agent":"","home":"/x"}', '[1]']) {
      expect(refusal(() => agentLockFrom({ [AGENT_LOCK_ENV]: bad }))).toBe('denied');
    }
  });
});

describe('sluice hooks install claude', () => {
  const launcher = { node: '/usr/bin/node', bin: '/opt/sluice/bin/sluice.js' };
  const store = { home: '/srv/sluice', db: undefined };
  const settingsOf = (plan: ReturnType<typeof planClaudeInstall>) =>
    JSON.parse(plan.changes.find((c) => /settings(\.local)?\.json$/.test(c.path))?.after ?? '{}');

  it('puts the agent lock in the settings env: this agent, this store, --attach from the project', () => {
    const project = mkdtempSync(join(tmpdir(), 'sluice-install-lock-'));
    try {
      writeFileSync(join(project, 'keep.txt'), '');
      const scope = { project, globalConfig: join(project, 'user-claude.json') };
      const settings = settingsOf(planClaudeInstall({ agent: 'bot', scope, store, launcher }));
      expect(agentLockFrom(settings.env)).toEqual({
        agent: 'bot',
        home: '/srv/sluice',
        db: undefined,
        attachRoots: [project],
      });
      expect(settings.permissions.allow).toContain('Bash(sluice message:*)');
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });

  it('a user-wide install names no folder: a locked --attach reads only materialised copies', () => {
    const configDir = mkdtempSync(join(tmpdir(), 'sluice-install-user-'));
    try {
      const scope = { user: { configDir, globalConfig: join(configDir, '.claude.json') } };
      const settings = settingsOf(planClaudeInstall({ agent: 'bot', scope, store, launcher }));
      expect(agentLockFrom(settings.env)?.attachRoots).toEqual([]);
    } finally {
      rmSync(configDir, { recursive: true, force: true });
    }
  });
});

describe('a locked --attach', () => {
  const root = mkdtempSync(join(tmpdir(), 'sluice-attach-'));
  const project = join(root, 'project');
  const home = join(project, '.sluice');
  const secret = join(root, 'id_ed25519');
  const attach: AgentLock = { agent: 'bot', home, attachRoots: [project] };
  beforeAll(() => {
    mkdirSync(join(project, 'docs'), { recursive: true });
    mkdirSync(join(home, 'materialized', 'abc'), { recursive: true });
    writeFileSync(join(project, 'docs', 'notes.txt'), 'notes');
    writeFileSync(join(home, 'materialized', 'abc', 'photo.png'), 'png');
    writeFileSync(join(home, 'sluice.db'), 'database');
    writeFileSync(secret, 'PRIVATE KEY');
    symlinkSync(secret, join(project, 'innocent.txt'));
    symlinkSync(root, join(project, 'up'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('reads a file in the working directory and a materialised copy', async () => {
    expect((await readAttachment(attach, join(project, 'docs', 'notes.txt'))).toString()).toBe('notes');
    expect((await readAttachment(attach, join(home, 'materialized', 'abc', 'photo.png'))).toString()).toBe(
      'png',
    );
  });

  it.each([
    ['a file outside every root', () => secret],
    ['a symlink in the project pointing out of it', () => join(project, 'innocent.txt')],
    ['a path through a symlinked folder', () => join(project, 'up', 'id_ed25519')],
    ['a .. path climbing out', () => join(project, 'docs', '..', '..', 'id_ed25519')],
    [
      'the database inside the Sluice home, even when the home sits in the project',
      () => join(home, 'sluice.db'),
    ],
  ])('refuses %s with denied', async (_name, path) => {
    await expect(readAttachment(attach, path())).rejects.toMatchObject({ code: 'denied' });
  });

  it('refuses a folder or a FIFO in the project as not a regular file, without hanging', async () => {
    execFileSync('mkfifo', [join(project, 'pipe')]);
    await expect(readAttachment(attach, join(project, 'docs'))).rejects.toMatchObject({
      code: 'invalid_params',
    });
    await expect(readAttachment(attach, join(project, 'pipe'))).rejects.toMatchObject({
      code: 'invalid_params',
    });
  });

  it('never attaches from a root that is the home folder or above it (a driver started from ~)', async () => {
    const savedHome = process.env.HOME;
    process.env.HOME = project;
    try {
      expect(isBroadFolder('/')).toBe(true);
      expect(isBroadFolder(project)).toBe(true);
      expect(isBroadFolder(root)).toBe(true);
      expect(isBroadFolder(join(project, 'docs'))).toBe(false);
      await expect(readAttachment(attach, join(project, 'docs', 'notes.txt'))).rejects.toMatchObject({
        code: 'denied',
      });
      const narrow: AgentLock = { ...attach, attachRoots: [join(project, 'docs')] };
      expect((await readAttachment(narrow, join(project, 'docs', 'notes.txt'))).toString()).toBe('notes');
    } finally {
      process.env.HOME = savedHome;
    }
  });

  it('reads any readable file when there is no lock (a person’s own CLI)', async () => {
    expect((await readAttachment(undefined, secret)).toString()).toBe('PRIVATE KEY');
  });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(bin: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(bin, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code: code ?? -1, stdout, stderr }));
  });
}

// Through the shim `sluice drive` writes, the way the model's shell runs it (built CLI). The owner's
// setup, and most refusals with the environment the shim sets, run the CLI in this process (the
// lock is read from process.env when a command runs); the shim itself is what the rest run.
describe('the driver shim', () => {
  const root = mkdtempSync(join(tmpdir(), 'sluice-lock-cli-'));
  const home = join(root, 'home');
  const other = join(root, 'other-home');
  const cwd = join(root, 'work');
  const secret = join(root, 'id_ed25519');
  let shim = '';
  let env: NodeJS.ProcessEnv = {};
  let forBot = '';
  let forAlice = '';
  let snapshot: () => Promise<unknown>;
  let close: () => Promise<void>;

  beforeAll(async () => {
    mkdirSync(cwd, { recursive: true });
    writeFileSync(join(cwd, 'report.txt'), 'the report');
    writeFileSync(secret, 'PRIVATE KEY');
    const ctx = await openHost({ home, durability: 'normal' });
    await initHome(ctx);
    const bot = await addPrincipal(ctx, { name: 'bot', kind: 'agent', settlement: 'explicit' });
    await addPrincipal(ctx, { name: 'alice', kind: 'agent', settlement: 'explicit' });
    const setup = await prepareDriver(ctx, bot, { entry: SLUICE_BIN, cwd });
    shim = join(setup.dir, 'bin', 'sluice');
    env = { ...setup.env, PATH: process.env.PATH ?? '' };
    const owner = (...args: string[]) =>
      runCliHere(['--home', home, '--as', 'owner', ...args], { home, env: { SLUICE_AGENT_LOCK: '' } });
    await owner('channel', 'create', 'ops', '--members', 'alice');
    forBot = (await owner('message', 'send', 'bot', '-m', 'hi bot')).stdout.trim();
    forAlice = (await owner('message', 'send', 'alice', '-m', 'for alice only')).stdout.trim();
    snapshot = async () => ({
      messages: await ctx.store.db
        .selectFrom('messages')
        .select(['id', 'author_id', 'body'])
        .orderBy('id')
        .execute(),
      inbox: await ctx.store.db
        .selectFrom('inbox')
        .select(['message_id', 'agent_id', 'state'])
        .orderBy('message_id')
        .execute(),
      principals: await ctx.store.db.selectFrom('principals').select(['name']).orderBy('name').execute(),
      channels: await ctx.store.db.selectFrom('channels').select(['id']).orderBy('id').execute(),
    });
    close = async () => {
      await ctx.store.close();
      rmSync(root, { recursive: true, force: true });
    };
  }, 60_000);
  afterAll(() => close?.());

  it.each([
    [
      'posting as the owner into a channel bot is not in',
      () => ['message', 'send', '#ops', '--as', 'owner', '-m', 'pwned'],
    ],
    ['listing another agent’s inbox', () => ['message', 'ls', '--as', 'alice', '--json', '--include-body']],
    ['archiving another agent’s message', () => ['message', 'archive', forAlice, '--as', 'alice']],
    ['switching the home', () => ['--home', other, 'message', 'ls']],
    ['switching the database', () => ['--db', join(other, 'x.db'), 'message', 'ls']],
    [
      'attaching a file outside the working directory',
      () => ['message', 'send', 'owner', '--attach', secret],
    ],
    ['creating a channel', () => ['channel', 'create', 'evil', '--members', 'bot']],
    ['blocking an inviter', () => ['channel', 'block', 'owner']],
    ['minting a token', () => ['token', 'owner']],
    ['adding an agent', () => ['agent', 'add', 'evil']],
    ['allowing an approval request', () => ['approval', 'allow', 'apr_anything', '--always']],
    ['listing approval requests', () => ['approval', 'ls', '--json']],
  ])(
    'refuses %s in one `denied` line and changes nothing',
    async (name, args) => {
      const before = await snapshot();
      const throughTheShim = name.startsWith('posting') || name.startsWith('attaching');
      const r = throughTheShim ? await run(shim, args(), env, cwd) : await runCliHere(args(), { home, env });
      expect(r.stderr).toMatch(/^sluice: denied: [^\n]+\n$/);
      expect(r.stdout).toBe('');
      expect(r.code).toBe(2);
      expect(await snapshot()).toEqual(before);
    },
    20_000,
  );

  it('acts as the locked agent whatever SLUICE_AS, SLUICE_HOME or SLUICE_AGENT_LOCK the caller sets', async () => {
    for (const extra of [{ SLUICE_AS: 'owner' }, { SLUICE_HOME: other }, { SLUICE_AGENT_LOCK: '' }]) {
      // The shim sets the lock and the identity again before the CLI starts.
      const r = await run(shim, ['message', 'ls', '--json'], { ...env, ...extra }, cwd);
      expect(r.stderr).toBe('');
      expect(JSON.parse(r.stdout).map((row: { id: string }) => row.id)).toEqual([forBot]);
    }
  }, 60_000);

  it('still lets the agent list, reply with an attachment from its cwd, and archive its own messages', async () => {
    const listed = await run(shim, ['message', 'ls', '--json'], env, cwd);
    expect(listed.stderr).toBe('');
    const rows = JSON.parse(listed.stdout);
    expect(rows.map((r: { id: string }) => r.id)).toEqual([forBot]);
    const reply = await run(
      shim,
      ['message', 'reply', forBot, '-m', 'done', '--attach', 'report.txt'],
      env,
      cwd,
    );
    expect(reply.stderr).toBe('');
    expect(reply.code).toBe(0);
    const archived = await run(shim, ['message', 'archive', forBot, '--as', 'bot', '--home', home], env, cwd);
    expect(archived.stderr).toBe('');
    expect(archived.code).toBe(0);
    expect(JSON.parse((await run(shim, ['message', 'ls', '--json'], env, cwd)).stdout)).toEqual([]);
  }, 90_000);
});

// The same lock on a PostgreSQL store: the locked database is the URL, and no other store opens.
describe.skipIf(!backendsUnderTest().includes('postgres'))('the driver shim on PostgreSQL', () => {
  let host: ConformanceHost;
  let shim = '';
  let env: NodeJS.ProcessEnv = {};
  let cwd = '';
  let forBot = '';

  beforeAll(async () => {
    host = await openConformanceHost('postgres', 'agentlock');
    const bot = await host.agent('bot');
    await host.agent('alice');
    cwd = mkdtempSync(join(tmpdir(), 'sluice-lock-pg-'));
    forBot = (await sendMessage(host.ctx, host.owner, { to: 'bot', body: 'hi bot' })).message_id;
    await sendMessage(host.ctx, host.owner, { to: 'alice', body: 'alice only' });
    const setup = await prepareDriver(host.ctx, bot, { entry: SLUICE_BIN, cwd, db: host.db });
    shim = join(setup.dir, 'bin', 'sluice');
    env = { ...setup.env, PATH: process.env.PATH ?? '' };
  }, 60_000);
  afterAll(async () => {
    await host?.close();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('lists only the agent’s own inbox and refuses another agent or a switch to the SQLite file', async () => {
    const own = await run(shim, ['message', 'ls', '--json'], env, cwd);
    expect(own.stderr).toBe('');
    expect(JSON.parse(own.stdout).map((r: { id: string }) => r.id)).toEqual([forBot]);
    for (const args of [
      ['message', 'ls', '--as', 'alice', '--json'],
      ['message', 'ls', '--db', join(host.home, 'sluice.db')],
    ]) {
      const r = await run(shim, args, env, cwd);
      expect(r.stderr).toMatch(/^sluice: denied: [^\n]+\n$/);
      expect(r.code).toBe(2);
    }
  }, 90_000);
});
