// Instructions a billed request costs on a node's main thread, counted by valgrind's callgrind:
// quartet as `npm start` starts it against the billed bare proxy (billed-bare-proxy.mjs), the anchor
// of issue 33, in front of the same fake upstream. The throughput ratios of proxy.bench.ts move by
// ±0.1 from one run to the next on a shared machine (bench/README.md, "Runs Q and R"); an
// instruction count depends far less on how fast the machine is that minute (but see below), so a
// change of 1% in what a request costs shows in a paired run. What it does not show: cache misses,
// syscalls' time in the kernel.
//
// Each node runs under `valgrind --tool=callgrind` with counting off; after 5,000 requests (V8 has
// compiled the hot path by then) counting is switched on for 3,000 requests (autocannon, 10
// connections) and off again, and the main thread's total is read from the dump. Both nodes run at
// once (each is one core's work under valgrind). Work done per second rather than per request (the
// configuration watch and the import queue's poll every second, the log's flush every 100 ms, V8's
// idle-time GC) is spread over ~25–100 requests a second under valgrind, against ~10,000 at full
// speed: on a slow machine it was 47 k of a request's 721 k. So the node's main thread is also
// counted idle for IDLE_SECONDS before the load, and that rate times the load's duration is taken
// off (both figures are in the notes). What is still timing's: how many billing steps share one
// commit (group commit, ../src/db/group-commit.ts) depends on how the requests arrive, so counts of
// one build differ between runs (the anchor 535 k in one run, 633 k in another on one machine):
// compare the two nodes of one run. Needs valgrind (Debian's package).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDatabaseUrl } from '../src/config.js';
import { openDatabase } from '../src/db/index.js';
import {
  buildCompiled,
  cliCommand,
  COMPILED_CLI,
  freePort,
  spawnQuartet,
  waitForHttp,
} from '../test/support/process.js';
import type { BenchResult } from './harness.js';
import { BILLED_BARE_PROXY, CHAT_BODY, fund, nodeEnv } from './proxy.bench.js';

/**
 * Requests before counting, and counted. A count of requests, not a time: under valgrind the
 * compiler threads share the main thread's core, and a node whose hot path is not compiled yet
 * (after 45 s of load, 1,800 requests, in a first try) cost 1.35 times as much.
 */
const WARM = Number(process.env.BENCH_INSTRUCTIONS_WARM ?? 5000);
const COUNTED = Number(process.env.BENCH_INSTRUCTIONS_REQUESTS ?? 3000);
const AUTOCANNON = fileURLToPath(new URL('../node_modules/autocannon/autocannon.js', import.meta.url));
const ROUNDS = Number(process.env.BENCH_INSTRUCTIONS_ROUNDS ?? 2);
const IDLE_SECONDS = Number(process.env.BENCH_INSTRUCTIONS_IDLE_SECONDS ?? 20);
const KEY = 'sk-instructions-bench-0000000000000001';
// valgrind's gdbserver names its pipes after USER and HOST; callgrind_control must find the same.
const VALGRIND_ENV = { USER: 'quartet', HOST: '127.0.0.1' };

type Target = 'start' | 'billedBare';

interface Counted {
  /**
   * Instructions a request on the main thread (its idle rate over the load's duration taken off),
   * and on every other thread together.
   */
  mainPerRequest: number;
  /** The same without the idle rate taken off. */
  mainPerRequestRaw: number;
  /** The main thread's instructions a second with no load. */
  idlePerSecond: number;
  othersPerRequest: number;
  requests: number;
  notOk: number;
}

export default async function instructionsBench(): Promise<BenchResult[]> {
  if (spawnSync('valgrind', ['--version']).status !== 0) throw new Error('valgrind is not installed');
  buildCompiled();
  const dir = mkdtempSync(join(tmpdir(), 'quartet-instructions-'));
  const upstreamPort = await freePort();
  const upstream = spawnQuartet(['fake-upstream', '--port', String(upstreamPort)], { compiled: true });
  try {
    await waitForHttp(`http://127.0.0.1:${upstreamPort}/v1/models`);
    const runs: Record<Target, Counted[]> = { start: [], billedBare: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const [start, billedBare] = await Promise.all([
        count('start', join(dir, `start-${round}`), upstreamPort),
        count('billedBare', join(dir, `billed-bare-${round}`), upstreamPort),
      ]);
      runs.start.push(start);
      runs.billedBare.push(billedBare);
    }
    const mean = (list: Counted[], field: keyof Counted) =>
      list.reduce((sum, item) => sum + item[field], 0) / list.length;
    const [quartet, anchor] = [mean(runs.start, 'mainPerRequest'), mean(runs.billedBare, 'mainPerRequest')];
    const rounds = (target: Target) => runs[target].map((r) => Math.round(r.mainPerRequest / 100) / 10).join(', ');
    return [
      {
        name: 'proxy: instructions of a billed request on the main thread, `npm start` against the billed bare proxy',
        value: Math.round(quartet / 100) / 10,
        unit: 'k instructions',
        anchor: 'bench/billed-bare-proxy.mjs',
        anchorValue: Math.round(anchor / 100) / 10,
        ratio: Math.round((quartet / anchor) * 1000) / 1000,
        goal: 'lower is better (ratio quartet / anchor)',
        notes:
          `callgrind, ${runs.start.map((r) => r.requests).join(', ')} requests counted (anchor ` +
          `${runs.billedBare.map((r) => r.requests).join(', ')}) after ${WARM}, 10 connections, ` +
          'SQLite, one hot account, mean of ' +
          `${ROUNDS} rounds (quartet ${rounds('start')}; anchor ${rounds('billedBare')} k); other threads ` +
          `${Math.round(mean(runs.start, 'othersPerRequest') / 1000)} k against ` +
          `${Math.round(mean(runs.billedBare, 'othersPerRequest') / 1000)} k; main thread idle ` +
          `${Math.round(mean(runs.start, 'idlePerSecond') / 1000)} k a second against ` +
          `${Math.round(mean(runs.billedBare, 'idlePerSecond') / 1000)} k, ` +
          "taken off over the load's duration (before: " +
          `${Math.round(mean(runs.start, 'mainPerRequestRaw') / 100) / 10} against ` +
          `${Math.round(mean(runs.billedBare, 'mainPerRequestRaw') / 100) / 10} k); answers of 400 and above: ` +
          `${[...runs.start, ...runs.billedBare].reduce((n, r) => n + r.notOk, 0)}`,
      },
    ];
  } finally {
    upstream.child.kill('SIGTERM');
    await upstream.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One node of `target` on a database of its own, under callgrind: its instructions a request. */
async function count(target: Target, dir: string, upstreamPort: number): Promise<Counted> {
  const databaseUrl = `sqlite:${join(dir, 'node.db')}`;
  const migrated = await spawnQuartet(['migrate'], { compiled: true, env: { DATABASE_URL: databaseUrl } }).exited;
  if (migrated !== 0) throw new Error('migrate failed');
  const db = await openDatabase(parseDatabaseUrl(databaseUrl));
  await fund(db, [KEY]);
  await db.close();
  const port = await freePort();
  const command =
    target === 'start'
      ? [...cliCommand(COMPILED_CLI), 'serve']
      : [BILLED_BARE_PROXY, String(port), String(upstreamPort), databaseUrl];
  const env = target === 'start' ? nodeEnv('start', port, databaseUrl, upstreamPort, dir) : {};
  const node = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      '--separate-threads=yes',
      `--callgrind-out-file=${join(dir, 'callgrind.%p')}`,
      process.execPath,
      ...command,
    ],
    { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, ...VALGRIND_ENV }, stdio: 'ignore' },
  );
  try {
    await waitForHttp(`http://127.0.0.1:${port}/`, 300_000);
    const url = `http://127.0.0.1:${port}/v1/chat/completions`;
    await load(url, WARM);
    control(node, '--instr=on');
    await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
    control(node, '--instr=off');
    control(node, '--dump');
    const [idle] = totals(dir, node.pid!, 1);
    control(node, '--instr=on');
    const started = performance.now();
    const { answered, notOk } = await load(url, COUNTED);
    const seconds = (performance.now() - started) / 1000;
    control(node, '--instr=off');
    control(node, '--dump');
    const [main, others] = totals(dir, node.pid!, 2);
    const idlePerSecond = idle / IDLE_SECONDS;
    return {
      mainPerRequest: (main - idlePerSecond * seconds) / answered,
      mainPerRequestRaw: main / answered,
      idlePerSecond,
      othersPerRequest: others / answered,
      requests: answered,
      notOk,
    };
  } finally {
    await stop(node);
  }
}

/** `amount` billed requests (autocannon's command, 10 connections): the answers, and those of 400 and above. */
async function load(url: string, amount: number): Promise<{ answered: number; notOk: number }> {
  const args = ['-c', '10', '-a', String(amount), '-m', 'POST', '-H', 'content-type=application/json'];
  args.push('-H', `authorization=Bearer ${KEY}`, '-b', CHAT_BODY, '--json', url);
  const run = spawn(process.execPath, [AUTOCANNON, ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
  let output = '';
  run.stdout.on('data', (chunk) => (output += chunk));
  await once(run, 'exit');
  const result = JSON.parse(output) as Record<string, number>;
  return {
    answered: result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'],
    notOk: result.non2xx,
  };
}

function control(node: ChildProcess, command: string): void {
  const run = spawnSync('callgrind_control', [command, String(node.pid)], {
    env: { PATH: process.env.PATH ?? '', ...VALGRIND_ENV },
    encoding: 'utf8',
  });
  if (run.status !== 0 || !run.stdout.includes('OK')) {
    throw new Error(`callgrind_control ${command}: ${run.stdout}${run.stderr}`);
  }
}

/** Dump `dump`'s instruction totals: the main thread's (thread 1) and the others' together. */
function totals(dir: string, pid: number, dump: number): [number, number] {
  let [main, others] = [0, 0];
  for (const file of readdirSync(dir).filter((name) => name.startsWith(`callgrind.${pid}.${dump}-`))) {
    const total = Number(/^totals: (\d+)/m.exec(readFileSync(join(dir, file), 'utf8'))?.[1] ?? 0);
    if (file.endsWith('-01')) main = total;
    else others += total;
  }
  if (main === 0) throw new Error(`no callgrind dump of the main thread in ${dir}`);
  return [main, others];
}

async function stop(node: ChildProcess): Promise<void> {
  if (node.exitCode !== null || node.signalCode !== null) return;
  const exited = once(node, 'exit');
  node.kill('SIGTERM');
  const timer = setTimeout(() => node.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}
