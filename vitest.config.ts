import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: a few files at a time keeps timing-sensitive HTTP tests stable.
    maxWorkers: 3,
    // As production runs (npm start, src/noproto.ts): no Object.prototype.__proto__ accessor.
    execArgv: ['--disable-proto=delete'],
    // Every test file ends by checking that nothing was added to the built-in prototypes.
    setupFiles: ['test/support/prototypes.ts'],
  },
});
