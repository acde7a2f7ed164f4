// The proxy node with billing on (priced, reserved, settled from usage, in SQLite) against
// nginx `proxy_pass` (Debian's package) to the same fake upstream, in the same run, 50
// connections. Each runs in its own process, as an operator runs them, and the load comes from a
// worker thread of this one. Two measurements:
// - throughput: closed loop (each connection sends again as soon as it is answered);
// - added latency: open loop at a fixed rate that all three carry, each percentile minus the
//   upstream's own at that rate. (At saturation a closed loop's latency is only its throughput
//   seen from the other side: 50 connections / req/s.)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { parseDatabaseUrl } from '../src/config.js';
import { openDatabase } from '../src/db/index.js';
import { freePort, spawnQuartet, waitForHttp } from '../test/support/process.js';
import { benchDuration, httpLoad, type BenchResult, type LoadResult } from './harness.js';

const CONNECTIONS = 50;
const WARMUP_MS = 500;
const ROUNDS = 3;
const MINT = 'http://127.0.0.1:3338';

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
  const [upstreamPort, nginxPort, nodePort] = [await freePort(), await freePort(), await freePort()];
  const upstream = spawnQuartet(['fake-upstream', '--port', String(upstreamPort)], { discardStdout: true });
  const nginx = startNginx(dir, nginxPort, upstreamPort);
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
    const db = await openDatabase(parseDatabaseUrl(databaseUrl));
    await db.kysely
      .insertInto('proxy_accounts')
      .values({ key_hash: createHash('sha256').update(key).digest('hex'), key_prefix: key.slice(0, 12), balance_msat: 1e15, mint_url: MINT, unit: 'sat', created_at: Date.now(), last_used_at: null })
      .execute();
    const billed = async () => Number((await db.kysely.selectFrom('proxy_requests').select(db.kysely.fn.countAll<number>().as('n')).where('status', '=', 'settled').executeTakeFirstOrThrow()).n);

    const body = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Say something short.' }], max_tokens: 16 });
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
    // CPU time per request (the node's main thread; all of nginx's processes), read from /proc: a
    // figure that contention on a shared machine distorts far less than throughput and latency.
    const withChildren = (pid: number) => [pid, ...String(spawnSync('pgrep', ['-P', String(pid)]).stdout).split(/\s+/).filter(Boolean).map(Number)];
    const cpu = { node: 0, nodeRequests: 0, nginx: 0, nginxRequests: 0 };
    const sent = (r: LoadResult) => r.requests + r.requestsPerSec * (WARMUP_MS / 1000);

    // Throughput: the three alternate, so drift hits all alike; the median run of each counts.
    const runs: Record<'direct' | 'nginx' | 'node', LoadResult[]> = { direct: [], nginx: [], node: [] };
    for (let round = 0; round < ROUNDS; round++) {
      runs.direct.push(await load(upstreamPort, false));
      const pids = withChildren(nginx.pid!);
      const nginxBefore = cpuMs(pids);
      const viaNginx = await load(nginxPort, false);
      cpu.nginx += cpuMs(pids) - nginxBefore;
      cpu.nginxRequests += sent(viaNginx);
      runs.nginx.push(viaNginx);
      const nodePids = withChildren(node.child.pid!);
      const nodeBefore = cpuMs(nodePids);
      const viaNode = await load(nodePort, true);
      cpu.node += cpuMs(nodePids) - nodeBefore;
      cpu.nodeRequests += sent(viaNode);
      runs.node.push(viaNode);
    }
    const median = (list: LoadResult[]) => [...list].sort((a, b) => a.requestsPerSec - b.requestsPerSec)[Math.floor(list.length / 2)];
    const [direct, viaNginx, viaNode] = [median(runs.direct), median(runs.nginx), median(runs.node)];

    // Added latency at a rate all three carry: half of what the slowest of them managed.
    const rate = Math.round(Math.min(direct.requestsPerSec, viaNginx.requestsPerSec, viaNode.requestsPerSec) / 2);
    const paced = { direct: [] as LoadResult[], nginx: [] as LoadResult[], node: [] as LoadResult[] };
    for (let round = 0; round < ROUNDS; round++) {
      paced.direct.push(await load(upstreamPort, false, rate));
      paced.nginx.push(await load(nginxPort, false, rate));
      paced.node.push(await load(nodePort, true, rate));
    }
    const medianOf = (list: LoadResult[], q: 'p50Ms' | 'p99Ms') => list.map((r) => r[q]).sort((a, b) => a - b)[Math.floor(list.length / 2)];
    const added = (list: LoadResult[], q: 'p50Ms' | 'p99Ms') => round(Math.max(0, medianOf(list, q) - medianOf(paced.direct, q)));
    const latencyNote = (q: 'p50Ms' | 'p99Ms') =>
      `at ${rate} req/s, ${CONNECTIONS} connections, median of ${ROUNDS}: node ${medianOf(paced.node, q).toFixed(2)} ms, nginx ${medianOf(paced.nginx, q).toFixed(2)} ms, upstream alone ${medianOf(paced.direct, q).toFixed(2)} ms`;

    const settled = await billed();
    await db.close();
    const errors = [...runs.node, ...paced.node].reduce((n, r) => n + r.errors, 0) + [...runs.nginx, ...paced.nginx].reduce((n, r) => n + r.errors, 0);
    const perRequest = (ms: number, n: number) => Math.round((ms * 1000) / n);
    return [
      {
        name: `proxy: billed chat completions throughput (${CONNECTIONS} connections)`,
        value: Math.round(viaNode.requestsPerSec),
        unit: 'req/s',
        anchor: 'nginx proxy_pass to the same upstream',
        anchorValue: Math.round(viaNginx.requestsPerSec),
        ratio: round(viaNode.requestsPerSec / viaNginx.requestsPerSec),
        goal: '>= 0.6',
        notes:
          `${onPostgres ? 'PostgreSQL' : 'SQLite'}, WORKERS=${workers}; median of ${ROUNDS} alternating runs; upstream alone ${Math.round(direct.requestsPerSec)} req/s; saturated p99 node ${viaNode.p99Ms.toFixed(1)} ms, nginx ${viaNginx.p99Ms.toFixed(1)} ms; ` +
          `${errors} errors; ${settled} requests billed and settled; CPU per request: node ${perRequest(cpu.node, cpu.nodeRequests)} µs (main threads), nginx ${perRequest(cpu.nginx, cpu.nginxRequests)} µs`,
      },
      {
        name: 'proxy: added latency p50 (billing on)',
        value: added(paced.node, 'p50Ms'),
        unit: 'ms',
        anchor: 'nginx added p50',
        anchorValue: added(paced.nginx, 'p50Ms'),
        notes: latencyNote('p50Ms'),
      },
      {
        name: 'proxy: added latency p99 (billing on)',
        value: added(paced.node, 'p99Ms'),
        unit: 'ms',
        anchor: 'nginx added p99',
        anchorValue: added(paced.nginx, 'p99Ms'),
        goal: '<= 2 ms',
        notes: latencyNote('p99Ms'),
      },
    ];
  } finally {
    node.child.kill('SIGTERM');
    upstream.child.kill('SIGTERM');
    nginx.kill('SIGQUIT');
    await Promise.race([Promise.all([node.exited, upstream.exited]), new Promise((resolve) => setTimeout(resolve, 5000))]);
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
