// docs/cli-reference.md is what the command definitions render (npm run docs:cli writes it).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/surfaces/cli/main.js';
import { renderCliReference } from '../../src/surfaces/cli/reference.js';
import { REPO_ROOT } from '../support/host.js';

describe('docs/cli-reference.md', () => {
  it('is up to date with the command definitions (else: npm run docs:cli)', async () => {
    const rendered = renderCliReference(await buildProgram());
    const file = readFileSync(join(REPO_ROOT, 'docs', 'cli-reference.md'), 'utf8');
    expect(file === rendered, 'docs/cli-reference.md is out of date: run npm run docs:cli').toBe(true);
    for (const command of [
      'sluice token create',
      'sluice hooks install',
      'sluice message send',
      'sluice wait',
    ]) {
      expect(rendered).toContain(`### ${command}\n`);
    }
    expect(rendered).not.toContain('### sluice hook\n');
  });
});
