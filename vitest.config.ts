import { configDefaults, defineConfig } from 'vitest/config';

// `npm run test:fast` (QUARTET_TEST_FAST=1): SQLite only, no browser, a shorter fuzz run, files sharing workers,
// and without the files that spawn quartet processes or measure latency under load; test/README.md says why.
const fast = process.env.QUARTET_TEST_FAST === '1';

const SLOW_FILES = [
  'test/viewer/**', // Chromium
  'test/platform/config.test.ts', // .env and CLI processes
  'test/platform/shutdown.test.ts', // SIGTERM to a child process
  'test/platform/workers.test.ts', // WORKERS processes
  'test/users/cli.test.ts', // CLI processes
  'test/devmint/cli.test.ts', // CLI processes
  'test/fakeupstream/command.test.ts', // CLI processes
  'test/proxy/forward-demo.test.ts', // npm run demo
  'test/proxy/recovery.test.ts', // a node killed mid-swap
  'test/proxy/recovery-resend.test.ts', // a node killed mid-swap
  'test/quotes/export-stall.test.ts', // /healthz latency during big exports
  'test/quotes/stall.test.ts', // /healthz latency during hostile uploads
];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: fast ? [...configDefaults.exclude, ...SLOW_FILES] : configDefaults.exclude,
    env: fast ? { QUARTET_TEST_DATABASES: 'sqlite', QUARTET_TEST_BROWSER: '0', FUZZ_RUNS: '100' } : {},
    // Limits for a hung test, not a speed check: at load 20 on 2 cores, tests that took 5 s idle took
    // over 30 s (a server started per database, tsx children, scrypt). A test that waits for something
    // waits for that event with a deadline and message of its own.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // The fast loop reuses a worker across files: src is imported once per worker, not once per file
    // (imports fell from 31 s to 10 s). The full suite keeps each file in a fresh process.
    isolate: !fast,
    // Two cores: a few files at a time keeps timing-sensitive HTTP tests stable.
    maxWorkers: 3,
    // As production runs (npm start, src/noproto.ts): no Object.prototype.__proto__ accessor.
    execArgv: ['--disable-proto=delete'],
    // Every test file ends by checking that nothing was added to the built-in prototypes.
    setupFiles: ['test/support/prototypes.ts'],
  },
});
