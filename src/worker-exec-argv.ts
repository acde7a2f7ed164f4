// The Node flags of a worker thread (piscina's) that runs one of quartet's modules, compiled (npm
// start) or from the TypeScript sources (tsx, vitest).

/** Node's flags a worker thread refuses in its execArgv (it shares the process's). */
const PROCESS_WIDE_FLAGS = ['--disable-proto', '--max-semi-space-size', '--max-old-space-size'];

/** Whether the module is TypeScript run without tsx's loader in the process's flags (vitest). */
const needsLoader = (moduleUrl: string) =>
  moduleUrl.endsWith('.ts') && !process.execArgv.some((flag) => flag.includes('tsx'));

/**
 * execArgv for a worker thread running the module at `moduleUrl`. Compiled, the module is a .js
 * file Node loads as it is; from the TypeScript sources the thread needs tsx's loader. A thread
 * refuses process-wide flags such as --disable-proto and V8's heap sizes (npm start, the tests):
 * it inherits them, and imports noproto.ts itself for the other ways of starting.
 */
export function workerExecArgv(moduleUrl: string): string[] {
  const execArgv = process.execArgv.filter((flag) => !PROCESS_WIDE_FLAGS.some((name) => flag.startsWith(name)));
  return needsLoader(moduleUrl) ? [...execArgv, '--import', 'tsx'] : execArgv;
}
