import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The real-client end-to-end tests run by default (npm test = CI); SLUICE_E2E=0 opts out locally.
    env: { SLUICE_E2E: process.env.SLUICE_E2E ?? '1' },
  },
});
