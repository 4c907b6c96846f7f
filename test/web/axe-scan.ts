// axe-core in the browser tests: its source is injected into the page (playwright's addScriptTag;
// the page's CSP allows only 'self' scripts, so the tests bypass CSP in their contexts) and run on
// the whole document. Only serious and critical violations fail a test; the rest are printed.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { REPO_ROOT } from '../support/host.js';

const AXE_SOURCE = readFileSync(join(REPO_ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/**
 * Runs axe on the page as it is now and returns one line per serious or critical violation
 * (rule, help and the first few elements), empty when there is none. axe is the costliest thing
 * these tests do in Chromium, so each distinct screen gets one whole-document scan; a later state
 * of a screen already scanned passes `within` (a CSS selector) to scan only the part that changed.
 */
export async function seriousViolations(page: Page, screen: string, within?: string): Promise<string[]> {
  // Page-side code is passed as text: the root tsconfig has no DOM types.
  const loaded = (await page.evaluate("typeof window.axe === 'object'")) as boolean;
  if (!loaded) await page.addScriptTag({ content: AXE_SOURCE });
  const context = within === undefined ? 'document' : JSON.stringify({ include: [[within]] });
  const result = (await page.evaluate(
    `window.axe.run(${context}, { resultTypes: ['violations'] }).then((r) => ({ violations: r.violations, passes: r.passes.length }))`,
  )) as { violations: AxeViolation[]; passes: number };
  // An axe that checked nothing (not loaded, empty page) must not pass for a clean scan.
  if (result.passes === 0) throw new Error(`${screen}: axe ran no check`);
  const violations = result.violations;
  if (process.env.SLUICE_AXE_VERBOSE)
    for (const v of violations) console.log(`${screen}: ${v.impact} ${v.id} ${v.nodes.length}`);
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${screen}: ${v.impact} ${v.id} (${v.help}) at ${v.nodes
          .slice(0, 3)
          .map((n) => n.target.join(' '))
          .join('; ')}`,
    );
}
