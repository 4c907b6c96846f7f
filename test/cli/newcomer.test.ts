import { writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliHere } from '../support/cli-in-process.js';
import { openTestHost, runCli, type TestHost } from '../support/host.js';

// What a newcomer's walkthrough of the CLI stumbled on: run in this process, and through the built
// launcher (`npm run build` first) for a usage error's exit code and a SLUICE_AS it inherits.
describe('the CLI for a newcomer', { timeout: 180_000 }, () => {
  let h: TestHost;
  beforeAll(async () => {
    h = await openTestHost();
    await h.agent('helper');
  });
  afterAll(async () => h.close());
  const cli = (args: string[], env?: Record<string, string>) => runCliHere(args, { home: h.home, env });
  const launcher = (args: string[], env?: Record<string, string>) => runCli(args, { home: h.home, env });
  const ok = async (...args: string[]) => {
    const r = await cli(args);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return r.stdout;
  };

  it.each([
    [['message', 'ls', '--help']],
    [['message', 'read', '--help']],
    [['help', 'channel', 'create']],
    [['queue', '--help']],
  ])(
    '`sluice %j` names the global options --as, --home and --db (explained once, in sluice --help)',
    async (args) => {
      const help = await ok(...args);
      const global = help.slice(help.indexOf('Global options (sluice --help explains them):'));
      expect(help).toContain('Global options (sluice --help explains them):');
      for (const option of ['--as NAME', '--home DIR', '--db URL']) expect(global).toContain(option);
    },
  );

  it('creates a channel of just its creator without --members, as the page does', async () => {
    expect(await ok('channel', 'create', 'solo')).toBe('#solo\n');
    expect(await ok('channel', 'create', 'solo2', '--members', '')).toBe('#solo2\n');
    const members = JSON.parse(await ok('channel', 'members', '#solo', '--json'));
    expect(members).toEqual([{ name: 'owner', kind: 'person' }]);
  });

  it('`channel create` with no arguments reports the missing name, not --members', async () => {
    const r = await launcher(['channel', 'create']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("sluice: invalid_params: missing required argument 'name'\n");
  });

  it("suggests the caller's own channels for a mistyped channel name, and only those", async () => {
    await h.person('alice');
    await ok('channel', 'create', 'team', '--members', 'helper');
    const alice = { SLUICE_AS: 'alice' };
    expect((await cli(['channel', 'create', 'teem'], alice)).code).toBe(0);
    const owner = await cli(['channel', 'history', '#tem']);
    expect(owner.code).toBe(2);
    expect(owner.stderr).toBe('sluice: not_found: no channel "#tem" (did you mean #team?)\n');
    // alice is not in #team: she hears of her own #teem, never of #team.
    const other = await cli(['channel', 'history', '#tem'], alice);
    expect(other.stderr).toBe('sluice: not_found: no channel "#tem" (did you mean #teem?)\n');
    const stranger = await cli(['message', 'send', '#tem', '-m', 'hi'], { SLUICE_AS: 'helper' });
    expect(stranger.stderr).toBe('sluice: not_found: no channel "#tem" (did you mean #team?)\n');
    await h.person('bob');
    const bob = await cli(['channel', 'history', '#tem'], { SLUICE_AS: 'bob' });
    expect(bob.stderr).toBe('sluice: not_found: no channel "#tem"\n');
    const leave = await cli(['channel', 'leave', '#tem'], { SLUICE_AS: 'bob' });
    expect(leave.stderr).toBe('sluice: not_found: no channel "#tem"\n');
  });

  it('`sluice start` says how to run the host and open the web page', async () => {
    const out = await ok('start');
    expect(out).toContain('This started no host.');
    // Spelled as it works here: `sluice` on PATH, else this clone's bin/sluice.js.
    expect(out).toMatch(/^ {2}\S*sluice(\.js)?( --home \S+)? serve +# \(or npm start\) serves the page/m);
    expect(out).toMatch(
      /^ {2}\S*sluice(\.js)?( --home \S+)? agent run helper --driver claude --cwd \. +# in a project folder/m,
    );
    expect(out).toContain('http://127.0.0.1:7777');
    expect(out).toMatch(/login link for owner: open it in a browser/);
    expect(out).toMatch(/^ {2}\S*sluice(\.js)?( --home \S+)? login-link /m);
  });

  it('`not_member` names the next step: a member adds you', async () => {
    await h.person('carol');
    await ok('channel', 'create', 'ops');
    const r = await cli(['channel', 'history', '#ops'], { SLUICE_AS: 'carol' });
    expect(r.code).toBe(2);
    // Quoted: pasted into a shell, a bare #ops would start a comment and drop the rest.
    expect(r.stderr).toBe(
      "sluice: not_member: you are not a member of that channel; ask a member to run `sluice channel add '#ops' carol`\n",
    );
  });

  it('`not_member` names the channel as it was typed (an id stays an id), and none when no channel was typed', async () => {
    await h.person('dora');
    await ok('channel', 'create', 'infra');
    const id = (JSON.parse(await ok('channel', 'ls', '--json')) as { id: string; name: string }[]).find(
      (c) => c.name === '#infra',
    )?.id as string;
    const messageId = (await ok('message', 'send', '#infra', '-m', 'deploy at 5')).trim();
    const asDora = (...args: string[]) => cli(args, { SLUICE_AS: 'dora' });
    const byId = await asDora('channel', 'history', id);
    expect(byId.stderr).toBe(
      `sluice: not_member: you are not a member of that channel; ask a member to run \`sluice channel add ${id} dora\`\n`,
    );
    const send = await asDora('message', 'send', id, '-m', '#infra');
    expect(send.stderr).toBe(
      `sluice: not_member: you are not a member of that channel; ask a member to run \`sluice channel add ${id} dora\`\n`,
    );
    // A message id names no channel the reader may know: no made-up #CHANNEL to paste.
    for (const args of [
      ['message', 'read', messageId],
      ['message', 'reply', messageId, '-m', '#infra'],
    ]) {
      const r = await asDora(...args);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe('sluice: not_member: you are not a member of that channel\n');
    }
  });

  it('an unknown --as or SLUICE_AS says which of them named it', async () => {
    const flag = await cli(['--as', 'nobody', 'message', 'ls']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toBe(
      'sluice: not_found: no principal named "nobody" (named by --as; sluice agent ls and sluice person ls list them)\n',
    );
    const env = await launcher(['message', 'ls'], { SLUICE_AS: 'helpr' });
    expect(env.stderr).toBe(
      'sluice: not_found: no principal named "helpr" (named by SLUICE_AS; did you mean helper?)\n',
    );
    // A name that came from elsewhere (here a message's recipient) is not blamed on --as.
    const to = await cli(['--as', 'helper', 'message', 'send', 'nobody', '-m', 'hi']);
    expect(to.stderr).toBe('sluice: not_found: no principal named "nobody"\n');
  });

  it("`queue ls` prints each card's place in line (1, 2, …), and --json keeps the stored position", async () => {
    await h.agent('worker');
    const ids: string[] = [];
    for (const body of ['one', 'two', 'three', 'four']) {
      ids.push((await ok('message', 'send', 'worker', '-m', body)).trim());
    }
    const archived = await cli(['message', 'archive', ids[0] as string, ids[1] as string], {
      SLUICE_AS: 'worker',
    });
    expect(archived.code).toBe(0);
    const table = (await ok('queue', 'ls', 'worker')).trimEnd().split('\n');
    expect(table[0]).toMatch(/^PLACE\s+STATE\s+SOURCE\s+ID\s+FROM\s+PREVIEW$/);
    expect(table.slice(1).map((line) => line.split(/\s+/)[0])).toEqual(['1', '2']);
    const cards = JSON.parse(await ok('queue', 'ls', 'worker', '--json')) as {
      place: number;
      position: number;
    }[];
    expect(cards.map((c) => c.place)).toEqual([1, 2]);
    expect(cards.map((c) => c.position)).toEqual([3, 4]);
  });

  it('login-link adds a note when no host answers at the origin serve left behind', async () => {
    const closed = await listening();
    const origin = `http://127.0.0.1:${closed.port}`;
    await closed.close();
    writeFileSync(join(h.home, 'serve-origin'), `${origin}\n`);
    const stale = await cli(['login-link']);
    expect(stale.code).toBe(0);
    expect(stale.stdout).toMatch(new RegExp(`^${origin}/login\\?code=sll_[A-Za-z0-9_-]{43}\n$`));
    expect(stale.stderr).toBe(
      `note: no host answers at ${origin}; start it with sluice serve (or npm start)\n`,
    );

    const open = await listening();
    try {
      writeFileSync(join(h.home, 'serve-origin'), `http://127.0.0.1:${open.port}\n`);
      const live = await cli(['login-link']);
      expect(live.stderr).toBe('');
      expect(live.stdout).toMatch(/\/login\?code=sll_/);
    } finally {
      await open.close();
    }
  });
  it("the owner may pause another's agent and see its counts, but only the cards of channels it shares (docs/cli.md)", async () => {
    await h.person('dana');
    expect((await cli(['agent', 'add', 'danas-bot'], { SLUICE_AS: 'dana' })).code).toBe(0);
    expect(await ok('queue', 'ls', 'danas-bot')).toBe('queue is empty\n');
    expect((await cli(['message', 'send', 'danas-bot', '-m', 'private'], { SLUICE_AS: 'dana' })).code).toBe(
      0,
    );
    expect(await ok('queue', 'ls', 'danas-bot')).toBe(
      'no cards you can see: 1 waiting in conversations you are not in (message danas-bot to share one)\n',
    );
    expect(await ok('queue', 'pause', 'danas-bot')).toBe('paused\n');
    await ok('message', 'send', 'danas-bot', '-m', 'hello');
    expect(await ok('queue', 'ls', 'danas-bot')).toMatch(/^PLACE/);
  });
});

/** A TCP listener on a free loopback port (it answers connects; that is all the check asks). */
async function listening(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
