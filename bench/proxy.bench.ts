// The proxy node with billing on (priced, reserved, settled from usage, in SQLite) against
// nginx `proxy_pass` (Debian's package) to the same fake upstream, in the same run, 50
// connections. A bare Node proxy (bare-node-proxy.mjs) runs beside them as a second anchor: the
// part of the gap to nginx that any Node proxy has. Each runs in its own process, as an operator
// runs them, and the load comes from a worker thread of this one. Two measurements:
// - throughput: closed loop (each connection sends again as soon as it is answered);
// - added latency: open loop at a fixed rate that all of them carry, each percentile minus the
//   upstream's own at that rate. (At saturation a closed loop's latency is only its throughput
//   seen from the other side: 50 connections / req/s.)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { parseDatabaseUrl } from '../src/config.js';
import { openDatabase } from '../src/db/index.js';
import { childPids, freePort, spawnQuartet, waitForHttp } from '../test/support/process.js';
import { benchDuration, httpLoad, type BenchResult, type LoadResult } from './harness.js';

const CONNECTIONS = 50;
const WARMUP_MS = 500;
const ROUNDS = 3;
const MINT = 'http://127.0.0.1:3338';
const BARE_PROXY = fileURLToPath(new URL('./bare-node-proxy.mjs', import.meta.url));

function startNginx(dir: string, port: number, upstreamPort: number): ChildProcess {
  const conf = join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream fake { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://fake;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  );
  return spawn('nginx', ['-c', conf, '-p', dir, '-e', `${dir}/error.log`], { stdio: 'ignore' });
}

export default async function proxyBench(): Promise<BenchResult[]> {
  if (spawnSync('nginx', ['-v']).error) throw new Error('nginx is not installed (apt-get install nginx-light)');
  const dir = mkdtempSync(join(tmpdir(), 'quartet-proxy-bench-'));
  const [upstreamPort, nginxPort, barePort, nodePort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const upstream = spawnQuartet(['fake-upstream', '--port', String(upstreamPort)], { discardStdout: true });
  const nginx = startNginx(dir, nginxPort, upstreamPort);
  const bare = spawn(process.execPath, [BARE_PROXY, String(barePort), String(upstreamPort)], { stdio: 'ignore' });
  // BENCH_PROXY_DATABASE=postgres: a fresh database on the local server instead of SQLite.
  const onPostgres = process.env.BENCH_PROXY_DATABASE === 'postgres';
  const pgName = `quartet_bench_${randomBytes(4).toString('hex')}`;
  if (onPostgres) await adminQuery(`create database ${pgName}`);
  const databaseUrl = onPostgres ? `${PG_SERVER}/${pgName}` : `sqlite:${join(dir, 'bench.db')}`;
  const workers = process.env.BENCH_PROXY_WORKERS ?? '1';
  const node = spawnQuartet(['serve'], {
    discardStdout: true,
    env: {
      PORT: String(nodePort),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      WORKERS: workers,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
      SERVICES: 'proxy',
      PROXY_UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
      PROXY_BTC_USD: '100000',
      PROXY_MINTS: MINT,
    },
  });
  const key = `sk-${randomBytes(24).toString('hex')}`;
  try {
    await waitForHttp(`http://127.0.0.1:${nodePort}/healthz`);
    await waitForHttp(`http://127.0.0.1:${upstreamPort}/v1/models`);
    await waitForHttp(`http://127.0.0.1:${nginxPort}/v1/models`);
    await waitForHttp(`http://127.0.0.1:${barePort}/v1/models`);
    const db = await openDatabase(parseDatabaseUrl(databaseUrl));
    await db.kysely
      .insertInto('proxy_accounts')
      .values({
        key_hash: createHash('sha256').update(key).digest('hex'),
        key_prefix: key.slice(0, 12),
        balance_msat: 1e15,
        mint_url: MINT,
        unit: 'sat',
        created_at: Date.now(),
        last_used_at: null,
      })
      .execute();
    const billed = async () =>
      Number(
        (
          await db.kysely
            .selectFrom('proxy_requests')
            .select(db.kysely.fn.countAll<number>().as('n'))
            .where('status', '=', 'settled')
            .executeTakeFirstOrThrow()
        ).n,
      );

    const body = JSON.stringify({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'Say something short.' }],
      max_tokens: 16,
    });
    const load = (port: number, auth: boolean, rate?: number) =>
      httpLoad({
        url: `http://127.0.0.1:${port}/v1/chat/completions`,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${key}` } : {}) },
        body,
        connections: CONNECTIONS,
        durationMs: benchDuration(5000),
        warmupMs: WARMUP_MS,
        rate,
      });
    // CPU time per request (main threads; all of nginx's processes), read from /proc: a figure
    // that contention on a shared machine distorts far less than throughput and latency.
    const withChildren = (pid: number) => [pid, ...childPids(pid)];
    const targets = {
      direct: { port: upstreamPort, auth: false, pids: () => [] as number[] },
      nginx: { port: nginxPort, auth: false, pids: () => withChildren(nginx.pid!) },
      bare: { port: barePort, auth: false, pids: () => [bare.pid!] },
      node: { port: nodePort, auth: true, pids: () => withChildren(node.child.pid!) },
    };
    type Target = keyof typeof targets;
    const names = Object.keys(targets) as Target[];
    type Cpu = Record<Target, { ms: number; requests: number }>;
    const cpu = Object.fromEntries(names.map((name) => [name, { ms: 0, requests: 0 }])) as Cpu;
    // The same at the paced rate: on a virtual machine each wake-up from idle costs, so a request
    // costs several times its saturated CPU when requests come one by one.
    const pacedCpu = Object.fromEntries(names.map((name) => [name, { ms: 0, requests: 0 }])) as Cpu;
    const measured = async (name: Target, into: Cpu, rate?: number) => {
      const pids = targets[name].pids();
      const before = cpuMs(pids);
      const result = await load(targets[name].port, targets[name].auth, rate);
      into[name].ms += cpuMs(pids) - before;
      into[name].requests += result.requests + result.requestsPerSec * (WARMUP_MS / 1000);
      return result;
    };
    const runs = Object.fromEntries(names.map((name) => [name, [] as LoadResult[]])) as Record<Target, LoadResult[]>;
    const paced = Object.fromEntries(names.map((name) => [name, [] as LoadResult[]])) as Record<Target, LoadResult[]>;

    // Throughput: the four alternate, so drift hits all alike; the median run of each counts.
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of names) runs[name].push(await measured(name, cpu));
    }
    const median = (list: LoadResult[]) =>
      [...list].sort((a, b) => a.requestsPerSec - b.requestsPerSec)[Math.floor(list.length / 2)];
    const best = Object.fromEntries(names.map((name) => [name, median(runs[name])])) as Record<Target, LoadResult>;

    // Added latency at a rate all of them carry: half of what the slowest managed.
    const rate = Math.round(Math.min(...names.map((name) => best[name].requestsPerSec)) / 2);
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of names) paced[name].push(await measured(name, pacedCpu, rate));
    }
    const medianOf = (list: LoadResult[], q: 'p50Ms' | 'p99Ms') =>
      list.map((r) => r[q]).sort((a, b) => a - b)[Math.floor(list.length / 2)];
    const added = (name: Target, q: 'p50Ms' | 'p99Ms') =>
      round(Math.max(0, medianOf(paced[name], q) - medianOf(paced.direct, q)));
    const latencyNote = (q: 'p50Ms' | 'p99Ms') =>
      `at ${rate} req/s, ${CONNECTIONS} connections, median of ${ROUNDS}: ` +
      names
        .map((name) => `${name === 'direct' ? 'upstream alone' : name} ${medianOf(paced[name], q).toFixed(2)} ms`)
        .join(', ');
    const perRequest = (name: Target, from: Cpu = cpu) => Math.round((from[name].ms * 1000) / from[name].requests);

    const settled = await billed();
    await db.close();
    const errors = [...runs.node, ...paced.node, ...runs.nginx, ...paced.nginx].reduce((n, r) => n + r.errors, 0);
    return [
      {
        name: `proxy: billed chat completions throughput (${CONNECTIONS} connections)`,
        value: Math.round(best.node.requestsPerSec),
        unit: 'req/s',
        anchor: 'nginx proxy_pass to the same upstream',
        anchorValue: Math.round(best.nginx.requestsPerSec),
        ratio: round(best.node.requestsPerSec / best.nginx.requestsPerSec),
        goal: '>= 0.6',
        notes:
          `${onPostgres ? 'PostgreSQL' : 'SQLite'}, WORKERS=${workers}; median of ${ROUNDS} alternating runs; ` +
          `upstream alone ${Math.round(best.direct.requestsPerSec)} req/s; ` +
          `bare Node proxy (bench/bare-node-proxy.mjs) ${Math.round(best.bare.requestsPerSec)} req/s = ` +
          `${round(best.bare.requestsPerSec / best.nginx.requestsPerSec)}× nginx; ` +
          `saturated p99 node ${best.node.p99Ms.toFixed(1)} ms, nginx ${best.nginx.p99Ms.toFixed(1)} ms; ` +
          `${errors} errors; ${settled} requests billed and settled; ` +
          `CPU per request: node ${perRequest('node')} µs, bare Node ${perRequest('bare')} µs, ` +
          `nginx ${perRequest('nginx')} µs`,
      },
      {
        name: 'proxy: added latency p50 (billing on)',
        value: added('node', 'p50Ms'),
        unit: 'ms',
        anchor: 'nginx added p50',
        anchorValue: added('nginx', 'p50Ms'),
        notes: latencyNote('p50Ms'),
      },
      {
        name: 'proxy: added latency p99 (billing on)',
        value: added('node', 'p99Ms'),
        unit: 'ms',
        anchor: 'nginx added p99',
        anchorValue: added('nginx', 'p99Ms'),
        goal: '<= 2 ms',
        notes:
          `${latencyNote('p99Ms')}; CPU per request at this rate: node ${perRequest('node', pacedCpu)} µs, ` +
          `bare Node ${perRequest('bare', pacedCpu)} µs, nginx ${perRequest('nginx', pacedCpu)} µs`,
      },
    ];
  } finally {
    node.child.kill('SIGTERM');
    upstream.child.kill('SIGTERM');
    nginx.kill('SIGQUIT');
    bare.kill('SIGTERM');
    await Promise.race([
      Promise.all([node.exited, upstream.exited]),
      new Promise((resolve) => setTimeout(resolve, 5000)),
    ]);
    rmSync(dir, { recursive: true, force: true });
    if (onPostgres) await adminQuery(`drop database if exists ${pgName} with (force)`);
  }
}

const PG_SERVER = process.env.BENCH_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432';

async function adminQuery(text: string) {
  const client = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** User + system CPU time of these threads (the main thread when tid = pid), in ms, from /proc. */
function cpuMs(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
    } catch {
      // a process that is gone used no more CPU
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
