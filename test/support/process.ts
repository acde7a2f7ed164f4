// Runs the quartet CLI as a child process, the way an operator would, from its TypeScript sources
// (production runs the compiled dist/cli.js: bin/quartet.js, `npm start`).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const QUARTET_CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
/** tsx's loader by its absolute URL: the children run in other directories, where `tsx` is not found. */
export const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
/** The compiled CLI, as `npm start` runs it: benchmarks measure it (tsx adds work to every closure). */
export const COMPILED_CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const BUILD_IF_NEEDED = fileURLToPath(new URL('../../scripts/build-if-needed.mjs', import.meta.url));

/** The arguments of `node` that run a CLI file: compiled JavaScript as `npm start` does, TypeScript through tsx. */
export function cliCommand(cli: string): string[] {
  return cli.endsWith('.js')
    ? ['--disable-proto=delete', '--max-semi-space-size=64', cli]
    : ['--import', TSX_LOADER, cli];
}

/** The arguments of `node` that run the CLI: `spawn(process.execPath, [...QUARTET_COMMAND, 'serve'])`. */
export const QUARTET_COMMAND = cliCommand(QUARTET_CLI);

/** Builds dist/ when it is missing or older than its sources (`npm start` does the same). */
export function buildCompiled(): void {
  const build = spawnSync(process.execPath, [BUILD_IF_NEEDED], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error(`building dist/ failed (exit ${build.status})`);
}

export interface QuartetProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/** `discardStdout`: the log is not kept (a benchmark's access log would fill memory). */
export function spawnQuartet(
  args: string[],
  options: {
    cwd?: string;
    env?: Record<string, string>;
    discardStdout?: boolean;
    compiled?: boolean;
    /** Node's own flags before the CLI (say `--cpu-prof`, which NODE_OPTIONS refuses). */
    nodeArgs?: string[];
  } = {},
): QuartetProcess {
  const command = options.compiled ? cliCommand(COMPILED_CLI) : QUARTET_COMMAND;
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...command, ...args], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'warn', ...options.env },
    stdio: ['ignore', options.discardStdout ? 'ignore' : 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return { child, output: () => output, exited };
}

/** Polls `url` until it answers or the time runs out. */
export async function waitForHttp(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(url);
      await response.body?.cancel();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms: ${String(error)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** A free loopback port (bind to 0, read it, release it). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  server.close();
  await once(server, 'close');
  return port;
}

/** The child processes of `pid`, those whose command line contains `pattern` when one is given. */
export function childPids(pid: number, pattern?: string): number[] {
  const args = ['-P', String(pid), ...(pattern ? ['-f', pattern] : [])];
  return String(spawnSync('pgrep', args).stdout).split(/\s+/).filter(Boolean).map(Number);
}

/**
 * `quartet serve` on a free loopback port, in a new temporary directory that holds its data (not
 * answering yet: waitForHttp). `stop()` kills it and removes the directory.
 */
export async function serveInTempDir(env: Record<string, string>, nodeArgs: string[] = []) {
  const cwd = mkdtempSync(join(tmpdir(), 'quartet-serve-'));
  const port = await freePort();
  const run = spawnQuartet(['serve'], { cwd, nodeArgs, env: { PORT: String(port), HOST: '127.0.0.1', ...env } });
  const stop = () => {
    run.child.kill('SIGKILL');
    rmSync(cwd, { recursive: true, force: true });
  };
  return { run, port, stop };
}

/** The JSON lines of a process's log (its other output left out). */
export function logLines(run: QuartetProcess): Record<string, unknown>[] {
  return run
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
