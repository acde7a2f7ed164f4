// Live SSE streams through one process: quartet's proxy node (billing on, SQLite, one funded
// account) against the bare Node proxy (bare-node-proxy.mjs, the SSE piped through), both in front
// of the same fake upstream trickling every answer (one event every 50 ms, 300 tokens: about 15 s).
// The load comes from a worker thread of this process (stream-load.mjs), so its CPU is not the
// targets'. For each target, at STREAMS (500) concurrent streams:
// - heap per live stream: the target's heap used while every stream is live minus idle, over N,
//   each read just after a full collection (gc-on-signal.mjs), the median of a few readings;
// - CPU per relayed event: the target's CPU time from /proc over the run, over the events received;
// - time to first byte of the answer, p99.
// Then a step search (1000, 2000, 4000… up to BENCH_STREAMS_MAX) for the most each carries with
// no error and TTFB p99 under 1 s. Quartet's account must fall by exactly the costs it reported.
// Portkey's gateway 1.15.2 is not a target: it cannot stream through a custom host on Node (its
// issues #1389, #1550).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { parseDatabaseUrl } from '../src/config.js';
import { openDatabase } from '../src/db/index.js';
import { childPids, freePort, QUARTET_COMMAND, spawnQuartet, waitForHttp } from '../test/support/process.js';
import { benchDuration, type BenchResult } from './harness.js';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 500);
const MAX_STREAMS = Number(process.env.BENCH_STREAMS_MAX ?? 8000);
const EVENT_EVERY_MS = 50;
/** Tokens an answer: 15 s at one an event (shorter with BENCH_SCALE). */
const TOKENS = Math.max(20, Math.round(benchDuration(15_000) / EVENT_EVERY_MS));
/** Streams open evenly over this long: arrivals, not one burst of N connections. */
const RAMP_MS = Number(process.env.BENCH_STREAMS_RAMP_MS ?? 3000);
const TTFB_LIMIT_MS = 1000;
const MINT = 'http://127.0.0.1:3338';
const BARE_PROXY = fileURLToPath(new URL('./bare-node-proxy.mjs', import.meta.url));
const GC_ON_SIGNAL = fileURLToPath(new URL('./gc-on-signal.mjs', import.meta.url));
/** Node options of both targets: the collection on demand, and BENCH_STREAMS_NODE_OPTIONS (say --cpu-prof). */
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

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  pids(): number[];
  /** Heap used now, in bytes. */
  readHeap(): Promise<number>;
}

/** The target's heap used just after a full collection: its live data. */
async function liveHeapOf(target: Target): Promise<number> {
  process.kill(target.pids()[0], 'SIGUSR2');
  await sleep(100);
  return target.readHeap();
}

/** Runs one load; samples the target's heap while every stream is live. */
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
      rampMs: Math.min(RAMP_MS, (tokens * EVENT_EVERY_MS) / 4),
    },
  });
  const pids = target.pids();
  const cpuBefore = cpuMs(pids);
  let sampling: Promise<void> | null = null;
  let live = false;
  const heaps: number[] = [];
  return new Promise<Measured>((resolve, reject) => {
    worker.on('message', (message: { phase: string; result?: StreamLoad }) => {
      if (message.phase === 'live') {
        live = true;
        sampling = (async () => {
          // A few readings (each a full collection, not free): the median counts.
          for (let i = 0; i < 3 && live; i++) {
            heaps.push(await liveHeapOf(target));
            await sleep(500);
          }
        })();
      } else if (message.phase === 'draining') {
        live = false;
      } else if (message.result) {
        const result = message.result;
        void (sampling ?? Promise.resolve()).then(() =>
          resolve({ ...result, cpuMs: cpuMs(pids) - cpuBefore, liveHeap: median(heaps) }),
        );
      }
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`stream load worker exited with ${code}`));
    });
  });
}

/** The median of a few heap readings of an idle target. */
async function idleHeap(target: Target): Promise<number> {
  const readings: number[] = [];
  for (let i = 0; i < 3; i++) readings.push(await liveHeapOf(target));
  return median(readings);
}

function median(list: number[]): number {
  return list.length ? [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] : NaN;
}

export default async function streamsBench(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'quartet-streams-bench-'));
  const [upstreamPort, barePort, nodePort] = [await freePort(), await freePort(), await freePort()];
  const upstream = spawnQuartet(
    [
      'fake-upstream',
      '--port',
      String(upstreamPort),
      '--chunk-delay-ms',
      String(EVENT_EVERY_MS),
      '--completion-tokens',
      '1000000',
    ],
    { discardStdout: true },
  );
  const bare = spawn(process.execPath, [...TARGET_NODE_OPTIONS, BARE_PROXY, String(barePort), String(upstreamPort)], {
    stdio: 'ignore',
  });
  const databaseUrl = `sqlite:${join(dir, 'bench.db')}`;
  // Spawned as spawnQuartet does, with the targets' node options in front.
  const node = spawn(process.execPath, [...TARGET_NODE_OPTIONS, ...QUARTET_COMMAND, 'serve'], {
    stdio: 'ignore',
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(nodePort),
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
  const nodeExited = once(node, 'exit');
  const key = `sk-${randomBytes(24).toString('hex')}`;
  try {
    await waitForHttp(`http://127.0.0.1:${nodePort}/healthz`);
    await waitForHttp(`http://127.0.0.1:${upstreamPort}/v1/models`);
    await waitForHttp(`http://127.0.0.1:${barePort}/v1/models`);
    const db = await openDatabase(parseDatabaseUrl(databaseUrl));
    const funded = 1e15;
    const keyHash = createHash('sha256').update(key).digest('hex');
    await db.kysely
      .insertInto('proxy_accounts')
      .values({
        key_hash: keyHash,
        key_prefix: key.slice(0, 12),
        balance_msat: funded,
        mint_url: MINT,
        unit: 'sat',
        created_at: Date.now(),
        last_used_at: null,
      })
      .execute();
    const account = async () =>
      db.kysely
        .selectFrom('proxy_accounts')
        .select(['balance_msat', 'reserved_msat'])
        .where('key_hash', '=', keyHash)
        .executeTakeFirstOrThrow();

    const targets: Target[] = [
      {
        name: 'bare',
        url: `http://127.0.0.1:${barePort}/v1/chat/completions`,
        headers: {},
        pids: () => [bare.pid!],
        readHeap: async () =>
          ((await (await fetch(`http://127.0.0.1:${barePort}/debug/memory`)).json()) as { heapUsed: number }).heapUsed,
      },
      {
        name: 'quartet',
        url: `http://127.0.0.1:${nodePort}/v1/chat/completions`,
        headers: { authorization: `Bearer ${key}` },
        pids: () => [node.pid!, ...childPids(node.pid!)],
        readHeap: async () => {
          const text = await (await fetch(`http://127.0.0.1:${nodePort}/metrics`)).text();
          const line = /^nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\S+)/m.exec(text);
          if (!line) throw new Error('quartet /metrics has no nodejs_heap_size_used_bytes');
          return Number(line[1]);
        },
      },
    ];

    let quartetCostMsat = 0;
    const run = async (target: Target, streams: number, tokens = TOKENS) => {
      const result = await streamLoad(target, streams, tokens);
      if (target.name === 'quartet') quartetCostMsat += result.costMsat;
      return result;
    };
    // Warm-up: a short load on each, so compiled code and pools are in place before idle is read.
    for (const target of targets) await run(target, 50, 20);
    const at = new Map<string, Measured & { idleHeap: number }>();
    for (const target of targets) {
      const idle = await idleHeap(target);
      at.set(target.name, { ...(await run(target, STREAMS)), idleHeap: idle });
    }
    // The most each carries: doubling from 2×STREAMS while the last step was clean.
    const most = new Map<string, number>(targets.map((t) => [t.name, 0]));
    const steps: string[] = [];
    for (const [name, result] of at) if (clean(result)) most.set(name, STREAMS);
    for (let n = STREAMS * 2; n <= MAX_STREAMS; n *= 2) {
      const stepping = targets.filter((t) => most.get(t.name) === n / 2);
      if (stepping.length === 0) break;
      for (const target of stepping) {
        const result = await run(target, n);
        steps.push(`${target.name} ${n}: ${describe(result)}`);
        if (clean(result)) most.set(target.name, n);
      }
    }

    const { balance_msat: balance, reserved_msat: reserved } = await account();
    await db.close();
    const fell = funded - balance;
    const exact = fell === quartetCostMsat && reserved === 0;

    const bareAt = at.get('bare')!;
    const nodeAt = at.get('quartet')!;
    const heapPerStream = (m: Measured & { idleHeap: number }) => (m.liveHeap - m.idleHeap) / m.streams;
    const cpuPerEvent = (m: Measured) => (m.cpuMs * 1000) / m.events;
    const kb = (bytes: number) => Math.round(bytes / 102.4) / 10;
    const load = `${STREAMS} streams of ${TOKENS} events every ${EVENT_EVERY_MS} ms, opened over ${Math.min(RAMP_MS, (TOKENS * EVENT_EVERY_MS) / 4)} ms`;
    return [
      {
        name: `streams: heap per live stream (${STREAMS} streams)`,
        value: kb(heapPerStream(nodeAt)),
        unit: 'KB',
        anchor: 'bare Node proxy',
        anchorValue: kb(heapPerStream(bareAt)),
        ratio: round(heapPerStream(nodeAt) / heapPerStream(bareAt)),
        goal: '<= 1.25 (lower is better)',
        notes:
          `${load}; heap used live − idle: quartet ${mb(nodeAt.liveHeap)} − ${mb(nodeAt.idleHeap)} MB, ` +
          `bare ${mb(bareAt.liveHeap)} − ${mb(bareAt.idleHeap)} MB`,
      },
      {
        name: `streams: CPU per relayed event (${STREAMS} streams)`,
        value: round(cpuPerEvent(nodeAt)),
        unit: 'µs',
        anchor: 'bare Node proxy',
        anchorValue: round(cpuPerEvent(bareAt)),
        ratio: round(cpuPerEvent(nodeAt) / cpuPerEvent(bareAt)),
        goal: '<= 1.25 (lower is better)',
        notes:
          `${load}; quartet ${nodeAt.cpuMs} ms CPU for ${nodeAt.events} events, ` +
          `bare ${bareAt.cpuMs} ms for ${bareAt.events}; errors quartet ${describeErrors(nodeAt)}, bare ${describeErrors(bareAt)}`,
      },
      {
        name: `streams: time to first byte p99 (${STREAMS} streams)`,
        value: round(nodeAt.ttfbP99Ms),
        unit: 'ms',
        anchor: 'bare Node proxy',
        anchorValue: round(bareAt.ttfbP99Ms),
        goal: 'within 5 ms of the anchor',
        notes: `${load}; p50 quartet ${round(nodeAt.ttfbP50Ms)} ms, bare ${round(bareAt.ttfbP50Ms)} ms`,
      },
      {
        name: 'streams: most concurrent streams carried',
        value: most.get('quartet')!,
        unit: 'streams',
        anchor: 'bare Node proxy',
        anchorValue: most.get('bare')!,
        ratio: round(most.get('quartet')! / Math.max(1, most.get('bare')!)),
        goal: '>= 1',
        notes: `doubling from ${STREAMS} to at most ${MAX_STREAMS} while no error and TTFB p99 < ${TTFB_LIMIT_MS} ms; ${steps.join('; ') || 'no step beyond the first'}`,
      },
      {
        name: 'streams: quartet billing exact',
        value: exact ? 1 : 0,
        unit: 'yes=1',
        goal: '1',
        notes: `account fell by ${fell} msat, the answers reported ${quartetCostMsat} msat; ${reserved} msat still reserved`,
      },
    ];
  } finally {
    node.kill('SIGTERM');
    upstream.child.kill('SIGTERM');
    bare.kill('SIGTERM');
    await Promise.race([
      Promise.all([nodeExited, upstream.exited]),
      new Promise((resolve) => setTimeout(resolve, 5000)),
    ]);
    rmSync(dir, { recursive: true, force: true });
  }
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
const mb = (bytes: number) => round(bytes / 1048576);
