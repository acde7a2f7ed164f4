// Live SSE streams through one process: quartet's proxy node (billing on, SQLite, one funded
// account) against the bare Node proxy (bare-node-proxy.mjs, the SSE piped through), both in front
// of the same fake upstream trickling every answer (one event every 50 ms, 300 tokens: about 15 s).
// The load comes from a worker thread of this process (stream-load.mjs), so its CPU is not the
// targets'. For each target, at BENCH_STREAMS (500) concurrent streams, the median of
// BENCH_STREAMS_ROUNDS (3) rounds in which the targets take turns:
// - heap per live stream: the target's heap used while every stream is live minus idle, over N,
//   each read just after a full collection (gc-on-signal.mjs), the median of a few readings;
// - CPU per relayed event: the target's CPU time from /proc over the run, over the events received;
// - time to first byte of the answer, p50 and p99 (from when the request was due).
// Then a step search (1000, 2000, 4000… up to BENCH_STREAMS_MAX) for the most each carries with
// no error and TTFB p99 under 1 s. Quartet's account must fall by exactly the costs it reported.
// BENCH_STREAMS_BEFORE=<dir>: another checkout's quartet (say `git archive <commit> src | tar -x
// -C scratch/before`, inside this checkout so its packages resolve) runs as a third target,
// "before", so one run gives the figures before and after a change. It runs compiled when it has
// a dist/ (a worktree built with `npm run build`), else from its sources through tsx, which costs
// a few per cent: then read each against the bare proxy.
// Portkey's gateway 1.15.2 is not a target: it cannot stream through a custom host on Node (its
// issues #1389, #1550).
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { parseDatabaseUrl } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/index.js';
import {
  buildCompiled,
  childPids,
  cliCommand,
  COMPILED_CLI,
  freePort,
  spawnQuartet,
  waitForHttp,
} from '../test/support/process.js';
import { benchDuration, median, type BenchResult } from './harness.js';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 500);
/** Measured rounds of each target at STREAMS (the targets take turns); each figure is the median round's. */
const ROUNDS = Number(process.env.BENCH_STREAMS_ROUNDS ?? 3);
const MAX_STREAMS = Number(process.env.BENCH_STREAMS_MAX ?? 8000);
const EVENT_EVERY_MS = 50;
/** Tokens an answer: 15 s at one an event (shorter with BENCH_SCALE). */
const TOKENS = Math.max(20, Math.round(benchDuration(15_000) / EVENT_EVERY_MS));
/** Streams open evenly over this long (at most a quarter of a stream): arrivals, not one burst. */
const RAMP_MS = Math.min(Number(process.env.BENCH_STREAMS_RAMP_MS ?? 3000), (TOKENS * EVENT_EVERY_MS) / 4);
const TTFB_LIMIT_MS = 1000;
const MINT = 'http://127.0.0.1:3338';
const FUNDED_MSAT = 1e15;
const BARE_PROXY = fileURLToPath(new URL('./bare-node-proxy.mjs', import.meta.url));
const GC_ON_SIGNAL = fileURLToPath(new URL('./gc-on-signal.mjs', import.meta.url));
/** Node options of every target: the collection on demand, and BENCH_STREAMS_NODE_OPTIONS (say --cpu-prof). */
const TARGET_NODE_OPTIONS = [
  '--import',
  GC_ON_SIGNAL,
  ...(process.env.BENCH_STREAMS_NODE_OPTIONS ?? '').split(' '),
].filter(Boolean);

interface StreamLoad {
  streams: number;
  completed: number;
  events: number;
  costMsat: number;
  errors: Record<string, number>;
  errorCount: number;
  ttfbP50Ms: number;
  ttfbP99Ms: number;
  elapsedMs: number;
}

interface Measured extends StreamLoad {
  cpuMs: number;
  /** Heap used while every stream was live (after a full collection, median), in bytes; NaN when never all were. */
  liveHeap: number;
}

/** One measured round of a target: its load, and its heap just before. */
interface Round extends Measured {
  idleHeap: number;
}

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  process: ChildProcess;
  /** Heap used now, in bytes. */
  readHeap(): Promise<number>;
  /** Quartet's: the costs its answers reported, and its account. */
  billing?: { reportedMsat: number; db: Database; keyHash: string };
}

export default async function streamsBench(): Promise<BenchResult[]> {
  buildCompiled(); // quartet runs as `npm start` runs it
  const dir = mkdtempSync(join(tmpdir(), 'quartet-streams-bench-'));
  const upstreamPort = await freePort();
  // Every answer as long as its max_tokens asks.
  const trickle = ['--chunk-delay-ms', String(EVENT_EVERY_MS), '--completion-tokens', '1000000'];
  // Compiled like the nodes: through tsx the upstream took more of the CPU the targets share.
  const upstream = spawnQuartet(['fake-upstream', '--port', String(upstreamPort), ...trickle], {
    compiled: true,
    discardStdout: true,
  });
  const targets: Target[] = [];
  try {
    await waitForHttp(`http://127.0.0.1:${upstreamPort}/v1/models`);
    targets.push(await startBare(upstreamPort));
    targets.push(await startQuartet('quartet', COMPILED_CLI, dir, upstreamPort));
    const before = process.env.BENCH_STREAMS_BEFORE;
    if (before) {
      const compiled = resolve(before, 'dist/cli.js');
      const cli = existsSync(compiled) ? compiled : resolve(before, 'src/cli.ts');
      targets.push(await startQuartet('before', cli, dir, upstreamPort));
    }

    const run = async (target: Target, streams: number, tokens = TOKENS) => {
      const result = await streamLoad(target, streams, tokens);
      if (target.billing) target.billing.reportedMsat += result.costMsat;
      return result;
    };
    // Warm-up: short streams, as many as the measured load, so that each target's code for a
    // stream (not only for an event) is compiled before idle is read and CPU counted. With 50 of
    // them, quartet was still compiling its per-stream code in the measured run (bench/README.md).
    for (const target of targets) await run(target, STREAMS, 20);
    // Rounds in which the targets take turns (each first once): a stall of the shared machine
    // lands in one target's round, not in its figure, which is the median of its rounds.
    const rounds = new Map<string, Round[]>(targets.map((t) => [t.name, []]));
    for (let turn = 0; turn < ROUNDS; turn++) {
      const first = turn % targets.length;
      for (const target of [...targets.slice(first), ...targets.slice(0, first)]) {
        const idleHeap = await heapOf(target);
        rounds.get(target.name)!.push({ ...(await run(target, STREAMS)), idleHeap });
      }
    }
    const medianOf = (name: string, figure: (round: Round) => number) => median(rounds.get(name)!.map(figure));
    const perRound = (name: string, figure: (round: Round) => number, unit: string) =>
      `${name} ${rounds
        .get(name)!
        .map((r) => round(figure(r)))
        .join(' / ')} ${unit}`;
    // The most each carries: doubling from 2×STREAMS while its last step was clean.
    const cleanRounds = (name: string) => rounds.get(name)!.filter(clean).length;
    const most = new Map(targets.map((t) => [t.name, cleanRounds(t.name) * 2 > ROUNDS ? STREAMS : 0]));
    const steps: string[] = [];
    for (let n = STREAMS * 2; n <= MAX_STREAMS; n *= 2) {
      const stepping = targets.filter((t) => most.get(t.name) === n / 2);
      if (stepping.length === 0) break;
      for (const target of stepping) {
        const result = await run(target, n);
        steps.push(`${target.name} ${n}: ${describe(result)}`);
        if (clean(result)) most.set(target.name, n);
      }
    }
    const billing = await Promise.all(targets.filter((t) => t.billing).map(billingOf));

    const heapPerStream = (name: string) => medianOf(name, (r) => (r.liveHeap - r.idleHeap) / r.streams);
    const cpuPerEvent = (name: string) => medianOf(name, (r) => (r.cpuMs * 1000) / r.events);
    const ttfb = (name: string, quantile: 'ttfbP50Ms' | 'ttfbP99Ms') => medianOf(name, (r) => r[quantile]);
    const others = (figure: (name: string) => string) =>
      targets
        .slice(2)
        .map((t) => `; ${t.name}: ${figure(t.name)}`)
        .join('');
    const load = `${STREAMS} streams of ${TOKENS} events every ${EVENT_EVERY_MS} ms, opened over ${RAMP_MS} ms`;
    const mbOf = (r: Round) => `${mb(r.liveHeap)} − ${mb(r.idleHeap)}`;
    const errorsOf = (name: string) => rounds.get(name)!.map(describeErrors).join(' / ');
    return [
      {
        name: `streams: heap per live stream (${STREAMS} streams)`,
        value: kb(heapPerStream('quartet')),
        unit: 'KB',
        anchor: 'bare Node proxy',
        anchorValue: kb(heapPerStream('bare')),
        ratio: round(heapPerStream('quartet') / heapPerStream('bare')),
        goal: '<= 1.25 (lower is better)',
        notes:
          `${load}; median of ${ROUNDS} rounds; heap used live − idle, MB: ` +
          targets.map((t) => `${t.name} ${rounds.get(t.name)!.map(mbOf).join(' / ')}`).join(', ') +
          others((name) => `${kb(heapPerStream(name))} KB`),
      },
      {
        name: `streams: CPU per relayed event (${STREAMS} streams)`,
        value: round(cpuPerEvent('quartet')),
        unit: 'µs',
        anchor: 'bare Node proxy',
        anchorValue: round(cpuPerEvent('bare')),
        ratio: round(cpuPerEvent('quartet') / cpuPerEvent('bare')),
        goal: '<= 1.25 (lower is better)',
        notes:
          `${load}; median of ${ROUNDS} rounds: ` +
          targets.map((t) => perRound(t.name, (r) => (r.cpuMs * 1000) / r.events, 'µs')).join(', ') +
          `; ${rounds.get('quartet')![0].events} events a round; errors: ` +
          targets.map((t) => `${t.name} ${errorsOf(t.name)}`).join(', ') +
          others((name) => `${round(cpuPerEvent(name))} µs`),
      },
      {
        name: `streams: time to first byte p99 (${STREAMS} streams)`,
        value: round(ttfb('quartet', 'ttfbP99Ms')),
        unit: 'ms',
        anchor: 'bare Node proxy',
        anchorValue: round(ttfb('bare', 'ttfbP99Ms')),
        goal: 'within 5 ms of the anchor',
        notes:
          `${load}; median of ${ROUNDS} rounds: p99 ` +
          targets.map((t) => perRound(t.name, (r) => r.ttfbP99Ms, 'ms')).join(', ') +
          '; p50 ' +
          targets.map((t) => perRound(t.name, (r) => r.ttfbP50Ms, 'ms')).join(', ') +
          others((name) => `p99 ${round(ttfb(name, 'ttfbP99Ms'))} ms`),
      },
      {
        name: 'streams: most concurrent streams carried',
        value: most.get('quartet')!,
        unit: 'streams',
        anchor: 'bare Node proxy',
        anchorValue: most.get('bare')!,
        ratio: round(most.get('quartet')! / Math.max(1, most.get('bare')!)),
        goal: '>= 1',
        notes:
          `doubling from ${STREAMS} to at most ${MAX_STREAMS} while no error and TTFB p99 < ${TTFB_LIMIT_MS} ms; ` +
          (steps.join('; ') || 'no step beyond the first') +
          others((name) => `${most.get(name)}`),
      },
      {
        name: 'streams: quartet billing exact',
        value: billing.every((b) => b.exact) ? 1 : 0,
        unit: 'yes=1',
        goal: '1',
        notes: billing.map((b) => b.note).join('; '),
      },
    ];
  } finally {
    for (const target of targets) target.process.kill('SIGTERM');
    upstream.child.kill('SIGTERM');
    await Promise.race([
      Promise.all([upstream.exited, ...targets.map((t) => t.process.exitCode === null && once(t.process, 'exit'))]),
      sleep(5000),
    ]);
    await Promise.all(targets.map((t) => t.billing?.db.close()));
    rmSync(dir, { recursive: true, force: true });
  }
}

async function startBare(upstreamPort: number): Promise<Target> {
  const port = await freePort();
  const child = spawn(process.execPath, [...TARGET_NODE_OPTIONS, BARE_PROXY, String(port), String(upstreamPort)], {
    stdio: 'ignore',
  });
  await waitForHttp(`http://127.0.0.1:${port}/v1/models`);
  return {
    name: 'bare',
    url: `http://127.0.0.1:${port}/v1/chat/completions`,
    headers: {},
    process: child,
    readHeap: async () =>
      ((await (await fetch(`http://127.0.0.1:${port}/debug/memory`)).json()) as { heapUsed: number }).heapUsed,
  };
}

/** A quartet proxy node from `cli` (this checkout's or another's), SQLite, one funded account. */
async function startQuartet(name: string, cli: string, dir: string, upstreamPort: number): Promise<Target> {
  const port = await freePort();
  const databaseUrl = `sqlite:${join(dir, `${name}.db`)}`;
  // Spawned as spawnQuartet does, with the targets' node options in front.
  const child = spawn(process.execPath, [...TARGET_NODE_OPTIONS, ...cliCommand(cli), 'serve'], {
    stdio: 'ignore',
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      WORKERS: '1',
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
      SERVICES: 'proxy',
      PROXY_UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
      PROXY_BTC_USD: '100000',
      PROXY_MINTS: MINT,
    },
  });
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
  const db = await openDatabase(parseDatabaseUrl(databaseUrl));
  const key = `sk-${randomBytes(24).toString('hex')}`;
  const keyHash = createHash('sha256').update(key).digest('hex');
  await db.kysely
    .insertInto('proxy_accounts')
    .values({
      key_hash: keyHash,
      key_prefix: key.slice(0, 12),
      balance_msat: FUNDED_MSAT,
      mint_url: MINT,
      unit: 'sat',
      created_at: Date.now(),
      last_used_at: null,
    })
    .execute();
  return {
    name,
    url: `http://127.0.0.1:${port}/v1/chat/completions`,
    headers: { authorization: `Bearer ${key}` },
    process: child,
    readHeap: async () => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const line = /^nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\S+)/m.exec(text);
      if (!line) throw new Error('quartet /metrics has no nodejs_heap_size_used_bytes');
      return Number(line[1]);
    },
    billing: { reportedMsat: 0, db, keyHash },
  };
}

/** Whether the account fell by exactly the costs the answers reported, nothing still reserved. */
async function billingOf({ name, billing }: Target): Promise<{ exact: boolean; note: string }> {
  const { reportedMsat, db, keyHash } = billing!;
  const account = await db.kysely
    .selectFrom('proxy_accounts')
    .select(['balance_msat', 'reserved_msat'])
    .where('key_hash', '=', keyHash)
    .executeTakeFirstOrThrow();
  const fell = FUNDED_MSAT - account.balance_msat;
  return {
    exact: fell === reportedMsat && account.reserved_msat === 0,
    note:
      `${name}: account fell by ${fell} msat, the answers reported ${reportedMsat} msat; ` +
      `${account.reserved_msat} msat still reserved`,
  };
}

/** Runs one load; reads the target's heap while every stream is live. */
function streamLoad(target: Target, streams: number, tokens: number): Promise<Measured> {
  const body = JSON.stringify({
    model: 'openai/gpt-4o-mini',
    messages: [{ role: 'user', content: 'Tell me a long story.' }],
    max_tokens: tokens,
    stream: true,
    stream_options: { include_usage: true },
  });
  const worker = new Worker(new URL('./stream-load.mjs', import.meta.url), {
    workerData: {
      url: target.url,
      headers: { 'content-type': 'application/json', ...target.headers },
      body,
      streams,
      rampMs: RAMP_MS,
    },
  });
  const pids = pidsOf(target);
  const cpuBefore = cpuMs(pids);
  const phase = { live: false };
  let reading: Promise<void> = Promise.resolve();
  const heaps: number[] = [];
  return new Promise<Measured>((resolve, reject) => {
    worker.on('message', (message: { phase: string; result?: StreamLoad }) => {
      if (message.phase === 'live') {
        phase.live = true;
        reading = (async () => {
          // A few readings (each a full collection, not free): the median counts.
          for (let i = 0; i < 3 && phase.live; i++) {
            heaps.push(await heapOf(target));
            await sleep(500);
          }
        })();
      } else if (message.phase === 'draining') {
        phase.live = false;
      } else if (message.result) {
        const result = message.result;
        void reading.then(() => resolve({ ...result, cpuMs: cpuMs(pids) - cpuBefore, liveHeap: median(heaps) }));
      }
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`stream load worker exited with ${code}`));
    });
  });
}

/** The target's heap used just after a full collection: its live data. */
async function heapOf(target: Target): Promise<number> {
  target.process.kill('SIGUSR2');
  await sleep(100);
  return target.readHeap();
}

function pidsOf(target: Target): number[] {
  return [target.process.pid!, ...childPids(target.process.pid!)];
}

function clean(result: StreamLoad): boolean {
  return result.errorCount === 0 && result.completed === result.streams && result.ttfbP99Ms < TTFB_LIMIT_MS;
}

function describeErrors(result: StreamLoad): string {
  return result.errorCount === 0 ? 'none' : JSON.stringify(result.errors);
}

function describe(result: Measured): string {
  return (
    `TTFB p99 ${round(result.ttfbP99Ms)} ms, ${result.completed}/${result.streams} complete, ` +
    `errors ${describeErrors(result)}, CPU/event ${round((result.cpuMs * 1000) / result.events)} µs`
  );
}

/** User + system CPU time of these processes (all their threads), in ms, from /proc. */
function cpuMs(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
    } catch {
      // a process that is gone used no more CPU
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (n: number) => Math.round(n * 100) / 100;
const kb = (bytes: number) => Math.round(bytes / 102.4) / 10;
const mb = (bytes: number) => round(bytes / 1048576);
