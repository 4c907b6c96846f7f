// Property: `hooks install claude` then `hooks uninstall claude` leaves a project — and the user's
// `.claude.json` — as it was, whatever the user had there (shared settings, local settings, an
// `.mcp.json`, other projects' entries); and at no point does a shared file (`.claude/settings.json`,
// `.mcp.json`) get a path, the home, the database URL or the agent lock.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, test } from 'vitest';
import { claudeProjectKey } from '../../src/surfaces/hooks/claude-files.js';
import { planClaudeInstall } from '../../src/surfaces/hooks/install-claude.js';
import { applyChanges } from '../../src/surfaces/hooks/install-files.js';
import { planClaudeUninstall } from '../../src/surfaces/hooks/uninstall.js';

const scratch = mkdtempSync(join(tmpdir(), 'sluice-install-roundtrip-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const launcher = { node: '/opt/node/bin/node', bin: '/home/alice/src/sluice/bin/sluice.js' };
const HOME = '/home/alice/.sluice-home';
const DB = 'postgres://alice@db.internal:5432/sluice';

const word = fc.stringMatching(/^[a-z][a-z0-9]{0,7}$/);
const scalar = fc.oneof(word, fc.integer(), fc.boolean());
/** User values: never empty containers (an emptied container is where Sluice's entries were). */
const userValue = fc.oneof(scalar, fc.array(scalar, { minLength: 1, maxLength: 3 }));
const userHooks = fc.dictionary(
  fc.constantFrom('SessionStart', 'UserPromptSubmit', 'Stop', 'PreToolUse'),
  fc.array(
    fc.record({
      hooks: fc.array(
        word.map((w) => ({ type: 'command', command: `echo ${w}` })),
        { minLength: 1 },
      ),
    }),
    { minLength: 1, maxLength: 2 },
  ),
  { minKeys: 1 },
);
const userSettings = fc.record(
  {
    model: word,
    hooks: userHooks,
    permissions: fc.record({
      allow: fc.array(
        word.map((w) => `Bash(${w}:*)`),
        { minLength: 1, maxLength: 3 },
      ),
    }),
    env: fc.dictionary(
      word.map((w) => `MY_${w.toUpperCase()}`),
      word,
      { minKeys: 1 },
    ),
    extra: fc.dictionary(
      word.map((w) => `x${w}`),
      userValue,
      { minKeys: 1 },
    ),
  },
  { requiredKeys: [] },
);
const userMcp = fc.record({
  mcpServers: fc.dictionary(
    word.map((w) => `srv${w}`),
    word.map((command) => ({ command })),
    { minKeys: 1 },
  ),
});
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

interface Layout {
  shared: object | undefined;
  local: object | undefined;
  mcp: object | undefined;
  global: { numStartups: number; otherProject?: object; thisProject?: object } | undefined;
  globalNewline: boolean;
  installs: { agent: string; wake: boolean; metadata: boolean; db: boolean }[];
}

/**
 * A local settings file the user wrote. Never bare `{}`: install writes Sluice's entries into it and
 * uninstall deletes a file it leaves as `{}`, the documented limit tested on its own below.
 */
const userLocalSettings = userSettings.filter((s) => Object.keys(s).length > 0);

const layout: fc.Arbitrary<Layout> = fc.record({
  // A shared `{}` is fine: install never writes to the shared file, so uninstall leaves it alone.
  shared: maybe(userSettings),
  local: maybe(userLocalSettings),
  mcp: maybe(userMcp),
  global: maybe(
    fc.record(
      {
        numStartups: fc.nat(),
        otherProject: fc.record({
          allowedTools: fc.constant([]),
          mcpServers: userMcp.map((m) => m.mcpServers),
        }),
        thisProject: fc.record({
          hasTrustDialogAccepted: fc.boolean(),
          mcpServers: userMcp.map((m) => m.mcpServers),
        }),
      },
      { requiredKeys: ['numStartups'] },
    ),
  ),
  globalNewline: fc.boolean(),
  installs: fc.array(
    fc.record({
      agent: fc.constantFrom('bot', 'helper'),
      wake: fc.boolean(),
      metadata: fc.boolean(),
      db: fc.boolean(),
    }),
    { minLength: 1, maxLength: 3 },
  ),
});

/** Every file under `dir` with its bytes (folders as entries too). */
function tree(dir: string, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      out[`${prefix}${name}/`] = '';
      Object.assign(out, tree(path, `${prefix}${name}/`));
    } else out[`${prefix}${name}`] = readFileSync(path, 'utf8');
  }
  return out;
}

const text = (value: object) => `${JSON.stringify(value, null, 2)}\n`;

describe('hooks install claude → hooks uninstall claude', () => {
  test('leaves the project and the user’s .claude.json byte for byte as they were; shared files never get per-user values', () => {
    let run = 0;
    fc.assert(
      fc.property(layout, (l) => {
        const root = join(scratch, `case-${run++}`);
        const project = join(root, 'project');
        const config = join(root, 'config');
        mkdirSync(project, { recursive: true });
        mkdirSync(config);
        // A repository of its own, so the local MCP key is this project (not a `.git` above /tmp).
        mkdirSync(join(project, '.git'));
        writeFileSync(join(project, 'README.md'), 'hello\n');
        if (l.shared || l.local) mkdirSync(join(project, '.claude'));
        if (l.shared) writeFileSync(join(project, '.claude', 'settings.json'), text(l.shared));
        if (l.local) writeFileSync(join(project, '.claude', 'settings.local.json'), text(l.local));
        if (l.mcp) writeFileSync(join(project, '.mcp.json'), text(l.mcp));
        const globalConfig = join(config, '.claude.json');
        const key = claudeProjectKey(project);
        if (l.global) {
          const projects: Record<string, object> = {};
          if (l.global.otherProject) projects['/somewhere/else'] = l.global.otherProject;
          if (l.global.thisProject) projects[key] = l.global.thisProject;
          const body = {
            numStartups: l.global.numStartups,
            ...(Object.keys(projects).length ? { projects } : {}),
          };
          const json = JSON.stringify(body, null, 2);
          writeFileSync(globalConfig, l.globalNewline ? `${json}\n` : json);
        }
        const projectBefore = tree(project);
        const globalBefore = existsSync(globalConfig) ? readFileSync(globalConfig, 'utf8') : null;
        const scope = { project, globalConfig };

        for (const i of l.installs) {
          const store = { home: HOME, db: i.db ? DB : undefined };
          const plan = planClaudeInstall({
            agent: i.agent,
            scope,
            store,
            launcher,
            wake: i.wake,
            metadata: i.metadata,
          });
          applyChanges(plan.changes);
          for (const shared of [join(project, '.claude', 'settings.json'), join(project, '.mcp.json')]) {
            const now = existsSync(shared) ? readFileSync(shared, 'utf8') : undefined;
            expect(now).toBe(projectBefore[shared.slice(project.length + 1)]);
          }
          const local = readFileSync(join(project, '.claude', 'settings.local.json'), 'utf8');
          expect(local).toContain(HOME);
          expect(
            JSON.parse(readFileSync(globalConfig, 'utf8')).projects[key].mcpServers.sluice.args,
          ).toContain(i.agent);
        }
        applyChanges(planClaudeUninstall(scope).changes);

        expect(tree(project)).toEqual(projectBefore);
        expect(existsSync(globalConfig) ? readFileSync(globalConfig, 'utf8') : null).toBe(globalBefore);
        rmSync(root, { recursive: true, force: true });
      }),
      { numRuns: 60 },
    );
  });

  test('the documented limit: a local settings file that held only {} is deleted by uninstall, and nothing else of the project changes', () => {
    const root = join(scratch, 'empty-local');
    const project = join(root, 'project');
    mkdirSync(join(project, '.claude'), { recursive: true });
    mkdirSync(join(project, '.git'));
    writeFileSync(join(project, '.claude', 'settings.json'), text({ model: 'opus' }));
    writeFileSync(join(project, '.claude', 'settings.local.json'), '{}\n');
    const scope = { project, globalConfig: join(root, '.claude.json') };
    const before = tree(project);
    applyChanges(
      planClaudeInstall({
        agent: 'bot',
        scope,
        store: { home: HOME, db: undefined },
        launcher,
        wake: false,
        metadata: false,
      }).changes,
    );
    expect(readFileSync(join(project, '.claude', 'settings.local.json'), 'utf8')).toContain(HOME);
    applyChanges(planClaudeUninstall(scope).changes);
    const { '.claude/settings.local.json': gone, ...kept } = before;
    expect(gone).toBe('{}\n');
    expect(tree(project)).toEqual(kept);
  });
});
