// The Node flags of a worker thread (piscina's) that runs one of quartet's modules, compiled (npm
// start) or from the TypeScript sources (tsx, vitest).

/** Node's flags a worker thread refuses in an execArgv given to it (it shares the process's). */
const PROCESS_WIDE_FLAGS = ['--disable-proto', '--max-semi-space-size', '--max-old-space-size'];

/**
 * execArgv for a worker thread running the module at `moduleUrl`: none of its own (undefined), so
 * that it inherits the process's flags, whichever they are: a thread given V8's or Node's
 * process-wide flags explicitly (--perf-basic-prof, --disable-proto, heap sizes) refuses to start.
 * Only a TypeScript module run without tsx's loader in the process's flags (vitest) is given a
 * list: the process's flags a thread accepts, and tsx's loader.
 */
export function workerExecArgv(moduleUrl: string): string[] | undefined {
  if (!moduleUrl.endsWith('.ts') || process.execArgv.some((flag) => flag.includes('tsx'))) return undefined;
  const execArgv = process.execArgv.filter((flag) => !PROCESS_WIDE_FLAGS.some((name) => flag.startsWith(name)));
  return [...execArgv, '--import', 'tsx'];
}
