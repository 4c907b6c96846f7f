import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/host.js';

// web/src/wire.ts takes the reply shapes type-only from src/core/wire (`npm run typecheck` checks
// the page against them). The page's type check has no Node types, so those modules must stay
// types only and import nothing from outside their folder.
const WIRE = join(REPO_ROOT, 'src', 'core', 'wire');

describe('the wire types the page imports', () => {
  const files = readdirSync(WIRE).filter((name) => name.endsWith('.ts'));

  it('are a folder of modules', () => {
    expect(files).toContain('index.ts');
  });

  it.each(files)('%s imports only its siblings, type-only, and declares no values', (name) => {
    const text = readFileSync(join(WIRE, name), 'utf8');
    const imports = [...text.matchAll(/^(import|export)\b[^;]*?from\s+['"]([^'"]+)['"]/gm)];
    for (const [statement, , spec] of imports) {
      expect(spec, statement).toMatch(/^\.\/[\w-]+\.js$/);
      expect(statement, statement).toMatch(/^(import|export) type\b/);
    }
    expect(text).not.toMatch(/^export (const|let|function|class|enum|default)\b/m);
  });

  it('are what the page re-exports, not a copy', () => {
    const page = readFileSync(join(REPO_ROOT, 'web', 'src', 'wire.ts'), 'utf8');
    expect(page).toContain("from '../../src/core/wire/index.js'");
    for (const restated of ['QueueSummary', 'QueueRow', 'TimelineMessage', 'HistoryPage', 'ConnectInfo']) {
      expect(page, restated).not.toMatch(new RegExp(`export interface ${restated}\\b`));
    }
  });
});
