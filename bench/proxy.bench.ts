// The proxy node with billing on (priced, reserved, settled from usage, in SQLite) against
// nginx `proxy_pass` (Debian's package) to the same fake upstream, in the same run, 50
// connections. Added latency = the proxy's percentile minus the upstream's own (measured
// directly). The fake upstream runs in its own process so it does not share the node's loop.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config.js';
import { loggerOptions } from '../src/http/logging.js';
import { buildServer } from '../src/server.js';
import { benchDuration, httpLoad, type BenchResult, type LoadResult } from './harness.js';

const CONNECTIONS = 50;
const WARMUP_MS = 500;
const QUARTET = fileURLToPath(new URL('../bin/quartet.js', import.meta.url));

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function waitFor(url: string, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(url);
      await response.body?.cancel();
      return;
    } catch {
      if (Date.now() > until) throw new Error(`${url} did not come up`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

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
  const upstreamPort = await freePort();
  const nginxPort = await freePort();
  const upstream = spawn(process.execPath, [QUARTET, 'fake-upstream', '--port', String(upstreamPort)], { stdio: 'ignore' });
  const nginx = startNginx(dir, nginxPort, upstreamPort);
  const key = `sk-${randomBytes(24).toString('hex')}`;
  const config = loadConfig({
    DATABASE_URL: `sqlite:${join(dir, 'bench.db')}`,
    LOG_LEVEL: 'info',
    SERVICES: 'proxy',
    PROXY_UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
    PROXY_BTC_USD: '100000',
  });
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  const { app, db } = await buildServer(config, { logger: { ...(loggerOptions('info') as object), stream: sink } });
  try {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const nodePort = (app.server.address() as { port: number }).port;
    await db.kysely
      .insertInto('proxy_accounts')
      .values({ key_hash: createHash('sha256').update(key).digest('hex'), key_prefix: key.slice(0, 12), balance_msat: 1e15, mint_url: config.proxy.mints[0], unit: 'sat', created_at: Date.now(), last_used_at: null })
      .execute();
    await waitFor(`http://127.0.0.1:${upstreamPort}/v1/models`);
    await waitFor(`http://127.0.0.1:${nginxPort}/v1/models`);

    const body = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Say something short.' }], max_tokens: 16 });
    const load = (port: number, auth: boolean) =>
      httpLoad({
        url: `http://127.0.0.1:${port}/v1/chat/completions`,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${key}` } : {}) },
        body,
        connections: CONNECTIONS,
        durationMs: benchDuration(5000),
        warmupMs: WARMUP_MS,
      });
    // Alternate the three and keep each one's best run, so drift hits all alike.
    const runs: Record<'direct' | 'nginx' | 'node', LoadResult[]> = { direct: [], nginx: [], node: [] };
    // CPU time per request (of the node's main thread; of nginx's processes), read from /proc: a
    // figure that contention on a shared machine distorts far less than throughput and latency.
    const nginxPids = () => [nginx.pid!, ...String(spawnSync('pgrep', ['-P', String(nginx.pid)]).stdout).split(/\s+/).filter(Boolean).map(Number)];
    const cpu = { node: 0, nodeRequests: 0, nginx: 0, nginxRequests: 0 };
    const count = async () => Number((await db.kysely.selectFrom('proxy_requests').select(db.kysely.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    for (let round = 0; round < 2; round++) {
      runs.direct.push(await load(upstreamPort, false));
      const pids = nginxPids();
      const nginxBefore = cpuMs(pids);
      const viaNginx = await load(nginxPort, false);
      cpu.nginx += cpuMs(pids) - nginxBefore;
      cpu.nginxRequests += viaNginx.requests + viaNginx.requestsPerSec * (WARMUP_MS / 1000);
      runs.nginx.push(viaNginx);
      const before = await count();
      const nodeBefore = cpuMs([process.pid]);
      runs.node.push(await load(nodePort, true));
      cpu.node += cpuMs([process.pid]) - nodeBefore;
      cpu.nodeRequests += (await count()) - before;
    }
    const perRequest = (ms: number, n: number) => Math.round((ms * 1000) / n);
    const best = (list: LoadResult[]) => list.reduce((a, b) => (b.requestsPerSec > a.requestsPerSec ? b : a));
    const direct = best(runs.direct);
    const viaNginx = best(runs.nginx);
    const viaNode = best(runs.node);
    const errors = `errors node ${viaNode.errors}, nginx ${viaNginx.errors}, direct ${direct.errors}; ${cpu.nodeRequests} requests billed and settled; CPU per request: node ${perRequest(cpu.node, cpu.nodeRequests)} µs (main thread), nginx ${perRequest(cpu.nginx, cpu.nginxRequests)} µs`;
    const added = (r: LoadResult, q: 'p50Ms' | 'p99Ms') => round(Math.max(0, r[q] - direct[q]));
    return [
      {
        name: `proxy: billed chat completions throughput (${CONNECTIONS} connections)`,
        value: Math.round(viaNode.requestsPerSec),
        unit: 'req/s',
        anchor: 'nginx proxy_pass to the same upstream',
        anchorValue: Math.round(viaNginx.requestsPerSec),
        ratio: round(viaNode.requestsPerSec / viaNginx.requestsPerSec),
        goal: '>= 0.6',
        notes: `upstream alone ${Math.round(direct.requestsPerSec)} req/s; ${errors}`,
      },
      {
        name: 'proxy: added latency p50 (billing on)',
        value: added(viaNode, 'p50Ms'),
        unit: 'ms',
        anchor: 'nginx added p50',
        anchorValue: added(viaNginx, 'p50Ms'),
        notes: `p50 node ${viaNode.p50Ms.toFixed(2)} ms, nginx ${viaNginx.p50Ms.toFixed(2)} ms, upstream alone ${direct.p50Ms.toFixed(2)} ms`,
      },
      {
        name: 'proxy: added latency p99 (billing on)',
        value: added(viaNode, 'p99Ms'),
        unit: 'ms',
        anchor: 'nginx added p99',
        anchorValue: added(viaNginx, 'p99Ms'),
        goal: '<= 2 ms',
        notes: `p99 node ${viaNode.p99Ms.toFixed(2)} ms, nginx ${viaNginx.p99Ms.toFixed(2)} ms, upstream alone ${direct.p99Ms.toFixed(2)} ms`,
      },
    ];
  } finally {
    await app.close();
    upstream.kill('SIGTERM');
    nginx.kill('SIGQUIT');
    await new Promise((resolve) => setTimeout(resolve, 300));
    rmSync(dir, { recursive: true, force: true });
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
