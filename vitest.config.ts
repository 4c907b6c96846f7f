import { existsSync } from 'node:fs';
import { configDefaults, defineConfig } from 'vitest/config';

// The browser tests drive Debian's Chromium (never a downloaded build). On a machine without it
// they are left out with one visible line, and everything else still runs (SLUICE_CHROMIUM names
// another path, e.g. a missing one to see that line).
const CHROMIUM = process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';
const browserTests = 'test/web/*.e2e.test.ts';
// SLUICE_BROWSER=0 leaves them out on purpose (npm run test:fast), without the line below.
const browserOff = process.env.SLUICE_BROWSER === '0';
const hasChromium = !browserOff && existsSync(CHROMIUM);
if (!hasChromium && !browserOff) {
  process.stderr.write(
    `[sluice tests] ${CHROMIUM} is missing: skipping the browser tests (${browserTests}); apt-get install chromium to run them\n`,
  );
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A temporary folder of the run's own, checked empty at its end (no test leaves files behind).
    globalSetup: ['test/support/global-setup.ts'],
    exclude: [...configDefaults.exclude, ...(hasChromium ? [] : [browserTests])],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default is one worker per core minus one: a single worker on a 2-core machine, which
    // ran the suite file after file (33 min in CI). Most of its time is spent waiting — on spawned
    // CLIs, real clients, Chromium, PostgreSQL — so three workers overlap that waiting: 6 min for
    // the same suite on the same machine. SLUICE_TEST_WORKERS overrides it.
    maxWorkers: Number(process.env.SLUICE_TEST_WORKERS) || 3,
    // The suite is CPU-bound on 2 cores, and a fresh worker per file spent ~0.9 CPU-s starting and
    // importing before its first test (147 files). Files share their worker's module registry
    // instead: every file closes what it opens and restores any global it changes, and a file that
    // mocks a module resets the registry around it (test/cli/newcomer-version.test.ts).
    // SLUICE_TEST_ISOLATE=1 gives each file a fresh worker, to tell whether a failure is a leak.
    isolate: process.env.SLUICE_TEST_ISOLATE === '1',
    // The real-client end-to-end tests run by default (npm test = CI); SLUICE_E2E=0 opts out locally.
    env: { SLUICE_E2E: process.env.SLUICE_E2E ?? '1' },
  },
});
