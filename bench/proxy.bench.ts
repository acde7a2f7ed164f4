// Issue 18's goals in one run: the proxy node with billing on (priced, reserved, settled from
// usage) against other gateways forwarding to the same fake upstream, 50 connections:
// - a bare Node proxy (bare-node-proxy.mjs): the least any Node proxy of this kind costs;
// - the same with quartet's durable billing and nothing else (billed-bare-proxy.mjs): the least a
//   Node proxy that bills each request through quartet's SQLite transactions costs;
// - Portkey's AI gateway (@portkey-ai/gateway, a dev dependency; no billing), pointed at the
//   upstream by its `x-portkey-custom-host` header: the Node gateway many pick;
// - nginx `proxy_pass` (Debian's package): the ceiling.
// quartet runs on SQLite and on PostgreSQL (a fresh database on the local server), each with one
// hot account, and again with one account per connection, in one process (WORKERS=1) and one per
// core (WORKERS=auto); and, as `npm start` starts it (every service mounted, every default feature
// on), with one hot account and with 50, and with the features an operator turns on (several
// providers, a child key paying; issue 33). `BENCH_PROXY_ONLY=bare,billedBare,start,…` measures
// only those targets (and starts only what they need): a quick A/B on a busy machine;
// `BENCH_PROXY_NODE_ARGS` are Node's flags for the quartet nodes (`--cpu-prof …`). Every target
// is a process of its own, as an operator runs it; the load comes from a worker thread of this one. Two measurements:
// - throughput: closed loop by autocannon, the targets alternating round by round so drift hits
//   all alike, the median round of each counting; CPU time per request from /proc;
// - added latency: open loop at a fixed rate that all of them carry, each percentile minus the
//   upstream's own at that rate. (At saturation a closed loop's latency is only its throughput
//   seen from the other side: 50 connections / req/s.)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { parseDatabaseUrl } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/index.js';
import {
  buildCompiled,
  childPids,
  freePort,
  spawnQuartet,
  waitForHttp,
  type QuartetProcess,
} from '../test/support/process.js';
import { benchDuration, httpLoad, type BenchResult, type LoadResult } from './harness.js';

const CONNECTIONS = 50;
const WARMUP_MS = 500;
const ROUNDS = 3;
const MINT = 'http://127.0.0.1:3338';
const BALANCE_MSAT = 1e15;
const BARE_PROXY = fileURLToPath(new URL('./bare-node-proxy.mjs', import.meta.url));
/** The billed request of every target. */
export const CHAT_BODY = JSON.stringify({
  model: 'openai/gpt-4o-mini',
  messages: [{ role: 'user', content: 'Say something short.' }],
  max_tokens: 16,
});
export const BILLED_BARE_PROXY = fileURLToPath(new URL('./billed-bare-proxy.mjs', import.meta.url));
const PORTKEY = fileURLToPath(new URL('../node_modules/@portkey-ai/gateway/build/start-server.js', import.meta.url));
/** Targets measured whatever BENCH_PROXY_ONLY says: the others' ratios are to them. */
const ANCHORS = ['upstream', 'bare', 'billedBare', 'billedBareMany'];
const PG_SERVER = process.env.BENCH_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432';

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

/** Portkey's gateway on `port` (`--port=`; it listens on every interface, its server takes no host). */
function startPortkey(port: number): ChildProcess {
  return spawn(process.execPath, [PORTKEY, `--port=${port}`, '--headless'], {
    stdio: 'ignore',
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production' },
  });
}

type DatabaseKind = 'sqlite' | 'postgres';
const LABEL: Record<DatabaseKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

interface QuartetNode {
  port: number;
  databaseUrl: string;
  process: QuartetProcess;
  /** The process and, with WORKERS=auto, its workers. */
  pids(): number[];
  pgName?: string;
}

/**
 * How a node is configured: `proxy`, the proxy service alone (SERVICES=proxy); `start`, as `npm start`
 * starts it (every service mounted, defaults but for where the upstream, the mint and the price are);
 * `operator`, the same with the features an operator turns on: several providers serving the model.
 */
export type NodeSetup = 'proxy' | 'start' | 'operator';

/** Three providers of the bench's model, all the fake upstream, drawn by weight (PROXY_PROVIDERS_FILE). */
function providersFile(dir: string, upstreamPort: number): string {
  const file = join(dir, 'providers.json');
  const provider = (name: string, weight: number) => ({
    name,
    base_url: `http://127.0.0.1:${upstreamPort}`,
    api_key: `sk-${name}`,
    weight,
    models: ['openai/gpt-4o-mini', 'openai/gpt-4o'],
  });
  writeFileSync(file, JSON.stringify({ providers: [provider('a', 3), provider('b', 2), provider('c', 1)] }));
  return file;
}

/** The environment of a node of `setup` (WORKERS=1; the bench's nodes set it). */
export function nodeEnv(setup: NodeSetup, port: number, databaseUrl: string, upstreamPort: number, dir: string) {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    WORKERS: '1',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    ...(setup === 'proxy' ? { SERVICES: 'proxy' } : {}),
    ...(setup === 'operator'
      ? { PROXY_PROVIDERS_FILE: providersFile(dir, upstreamPort) }
      : { PROXY_UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}` }),
    PROXY_BTC_USD: '100000',
    PROXY_MINTS: MINT,
  };
}

/** A quartet node on a database of its own (not yet answering). */
async function startNode(
  kind: DatabaseKind,
  workers: '1' | 'auto',
  dir: string,
  upstreamPort: number,
  setup: NodeSetup = 'proxy',
) {
  const port = await freePort();
  const pgName = kind === 'postgres' ? `quartet_bench_${randomBytes(4).toString('hex')}` : undefined;
  if (pgName) await adminQuery(`create database ${pgName}`);
  const databaseUrl = pgName ? `${PG_SERVER}/${pgName}` : `sqlite:${join(dir, `bench-${setup}-${workers}.db`)}`;
  const node = spawnQuartet(['serve'], {
    compiled: true,
    discardStdout: true,
    env: { ...nodeEnv(setup, port, databaseUrl, upstreamPort, dir), WORKERS: workers },
    // Say `--cpu-prof --cpu-prof-dir=…` to profile the nodes (written when the bench stops them).
    nodeArgs: process.env.BENCH_PROXY_NODE_ARGS?.split(' ').filter(Boolean),
  });
  const pid = node.child.pid!;
  return { port, databaseUrl, process: node, pids: () => [pid, ...childPids(pid)], pgName } satisfies QuartetNode;
}

/** Accounts as a funded wallet leaves them (through the store, not Cashu: no mint runs here). */
export async function fund(db: Database, keys: string[]): Promise<void> {
  await db.kysely
    .insertInto('proxy_accounts')
    .values(
      keys.map((key) => ({
        key_hash: createHash('sha256').update(key).digest('hex'),
        key_prefix: key.slice(0, 12),
        balance_msat: BALANCE_MSAT,
        mint_url: MINT,
        unit: 'sat',
        created_at: Date.now(),
        last_used_at: null,
      })),
    )
    .execute();
}

/** A child key of `parentKey`'s account, with a limit (reset daily) that the load never reaches. */
async function addChildKey(db: Database, parentKey: string, childKey: string): Promise<void> {
  const hash = (key: string) => createHash('sha256').update(key).digest('hex');
  const parent = await db.kysely
    .selectFrom('proxy_accounts')
    .select('id')
    .where('key_hash', '=', hash(parentKey))
    .executeTakeFirstOrThrow();
  await db.kysely
    .insertInto('proxy_child_keys')
    .values({
      parent_account_id: parent.id,
      key_hash: hash(childKey),
      key_prefix: childKey.slice(0, 12),
      limit_msat: BALANCE_MSAT / 2,
      reset_period: 'daily',
      period_start: Date.now(),
      expires_at: null,
      created_at: Date.now(),
    })
    .execute();
}

/** What the database says was billed, and whether every account's balance agrees with its spending. */
async function billing(db: Database) {
  const settled = await db.kysely
    .selectFrom('proxy_requests')
    .select(db.kysely.fn.countAll<number>().as('n'))
    .where('status', '=', 'settled')
    .executeTakeFirstOrThrow();
  const accounts = await db.kysely
    .selectFrom('proxy_accounts')
    .select(['balance_msat', 'reserved_msat', 'total_spent_msat'])
    .execute();
  return {
    settled: Number(settled.n),
    /** Left reserved after the run (every request over: should be 0). */
    reserved: accounts.reduce((sum, account) => sum + Number(account.reserved_msat), 0),
    /** Accounts whose balance fell by other than what they spent (no top-ups here: should be 0). */
    disagreeing: accounts.filter(
      (account) => Number(account.balance_msat) + Number(account.total_spent_msat) !== BALANCE_MSAT,
    ).length,
    accounts: accounts.length,
  };
}

export default async function proxyBench(): Promise<BenchResult[]> {
  buildCompiled(); // quartet runs as `npm start` runs it
  // Every target, or those BENCH_PROXY_ONLY names (the results that need others are left out).
  const only = process.env.BENCH_PROXY_ONLY?.split(',').map((name) => name.trim());
  const wanted = (...list: string[]) => !only || list.some((name) => only.includes(name));
  const needsPg = wanted('postgres', 'postgresMany', 'postgresManyAuto');
  if (wanted('nginx') && spawnSync('nginx', ['-v']).error) {
    throw new Error('nginx is not installed (apt-get install nginx-light)');
  }
  if (needsPg) {
    await adminQuery('select 1').catch((error: unknown) => {
      throw new Error(`the proxy bench needs PostgreSQL at ${PG_SERVER} (BENCH_PG_SERVER): ${String(error)}`);
    });
  }
  const dir = mkdtempSync(join(tmpdir(), 'quartet-proxy-bench-'));
  const [upstreamPort, nginxPort, barePort, billedBarePort, portkeyPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  // Compiled like the nodes: through tsx the upstream took more of the CPU the targets share.
  const upstream = spawnQuartet(['fake-upstream', '--port', String(upstreamPort)], {
    compiled: true,
    discardStdout: true,
  });
  const nginx = wanted('nginx') ? startNginx(dir, nginxPort, upstreamPort) : undefined;
  const bare = spawn(process.execPath, [BARE_PROXY, String(barePort), String(upstreamPort)], { stdio: 'ignore' });
  const billedBareUrl = `sqlite:${join(dir, 'billed-bare.db')}`;
  const migrated = await spawnQuartet(['migrate'], { compiled: true, env: { DATABASE_URL: billedBareUrl } }).exited;
  if (migrated !== 0) throw new Error(`quartet migrate for the billed bare proxy exited with ${migrated}`);
  const billedBare = spawn(
    process.execPath,
    [BILLED_BARE_PROXY, String(billedBarePort), String(upstreamPort), billedBareUrl],
    { stdio: 'ignore' },
  );
  const portkey = wanted('portkey') ? startPortkey(portkeyPort) : undefined;
  const nodes: QuartetNode[] = [];
  const databases: Database[] = [];
  try {
    await waitForHttp(`http://127.0.0.1:${upstreamPort}/v1/models`);
    // The nodes the wanted targets use: [database, workers, setup, the targets on it].
    const plan = [
      ['sqlite', '1', 'proxy', ['sqlite', 'sqliteMany']],
      ['postgres', '1', 'proxy', ['postgres', 'postgresMany']],
      ['sqlite', 'auto', 'proxy', ['sqliteManyAuto']],
      ['postgres', 'auto', 'proxy', ['postgresManyAuto']],
      ['sqlite', '1', 'start', ['start', 'startMany']],
      ['sqlite', '1', 'operator', ['operator']],
    ] as const;
    const started = new Map<string, QuartetNode>();
    for (const [kind, workers, setup, uses] of plan) {
      if (!wanted(...uses)) continue;
      const node = await startNode(kind, workers, dir, upstreamPort, setup);
      nodes.push(node);
      started.set(`${kind} ${workers} ${setup}`, node);
    }
    for (const node of nodes) {
      await waitForHttp(`http://127.0.0.1:${node.port}/healthz`);
      databases.push(await openDatabase(parseDatabaseUrl(node.databaseUrl)));
    }
    // The first worker answers while the others still compile (tsx): no measuring before they are done.
    for (const node of nodes) await settle(node.pids);
    const dbOf = (node: QuartetNode) => databases[nodes.indexOf(node)];
    if (nginx) await waitForHttp(`http://127.0.0.1:${nginxPort}/v1/models`);
    await waitForHttp(`http://127.0.0.1:${barePort}/v1/models`);
    await waitForHttp(`http://127.0.0.1:${billedBarePort}/v1/models`);
    const billedBareDb = await openDatabase(parseDatabaseUrl(billedBareUrl));
    databases.push(billedBareDb);
    if (portkey) await waitForHttp(`http://127.0.0.1:${portkeyPort}/`);

    const newKey = () => `sk-${randomBytes(24).toString('hex')}`;
    const hotKey = newKey();
    /** The key of a child of the operator node's hot account: what its load pays with. */
    const childKey = newKey();
    // One account per connection; the WORKERS=1 and WORKERS=auto nodes of a database each get theirs.
    const manyKeys = new Map(nodes.map((node) => [node, Array.from({ length: CONNECTIONS }, newKey)]));
    for (const node of nodes) await fund(dbOf(node), [hotKey, ...manyKeys.get(node)!]);
    /** The billed bare proxy's own accounts, one per connection (the anchor of the 50-account rows). */
    const billedBareKeys = Array.from({ length: CONNECTIONS }, newKey);
    await fund(billedBareDb, [hotKey, ...billedBareKeys]);
    const operatorNode = started.get('sqlite 1 operator');
    if (operatorNode) await addChildKey(dbOf(operatorNode), hotKey, childKey);

    const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
    const perConnection = (node: QuartetNode) => manyKeys.get(node)!.map(bearer);
    const withChildren = (pid: number) => [pid, ...childPids(pid)];
    interface Target {
      port: number;
      headers?: Record<string, string>;
      connectionHeaders?: Record<string, string>[];
      pids(): number[];
      /** Its answers are billed in this database. */
      billedIn?: Database;
    }
    const hot = (node: QuartetNode | undefined, key = hotKey): Target | undefined =>
      node && { port: node.port, headers: bearer(key), pids: node.pids, billedIn: dbOf(node) };
    const many = (node: QuartetNode | undefined): Target | undefined =>
      node && { port: node.port, connectionHeaders: perConnection(node), pids: node.pids, billedIn: dbOf(node) };
    const all = {
      upstream: { port: upstreamPort, pids: () => [] },
      nginx: nginx && { port: nginxPort, pids: () => withChildren(nginx.pid!) },
      bare: { port: barePort, pids: () => [bare.pid!] },
      billedBare: {
        port: billedBarePort,
        headers: bearer(hotKey),
        pids: () => [billedBare.pid!],
        billedIn: billedBareDb,
      },
      billedBareMany: wanted('startMany')
        ? {
            port: billedBarePort,
            connectionHeaders: billedBareKeys.map(bearer),
            pids: () => [billedBare.pid!],
            billedIn: billedBareDb,
          }
        : undefined,
      portkey: portkey && {
        port: portkeyPort,
        headers: {
          'x-portkey-provider': 'openai',
          'x-portkey-custom-host': `http://127.0.0.1:${upstreamPort}/v1`,
          ...bearer('sk-upstream'),
        },
        pids: () => [portkey.pid!],
      },
      sqlite: hot(started.get('sqlite 1 proxy')),
      postgres: hot(started.get('postgres 1 proxy')),
      sqliteMany: many(started.get('sqlite 1 proxy')),
      sqliteManyAuto: many(started.get('sqlite auto proxy')),
      postgresMany: many(started.get('postgres 1 proxy')),
      postgresManyAuto: many(started.get('postgres auto proxy')),
      start: hot(started.get('sqlite 1 start')),
      startMany: many(started.get('sqlite 1 start')),
      operator: hot(operatorNode, childKey),
    } satisfies Record<string, Target | undefined>;
    const targets = Object.fromEntries(
      Object.entries(all).filter(
        ([name, target]) => target && (ANCHORS.includes(name) || !only || only.includes(name)),
      ),
    ) as Record<keyof typeof all, Target>;
    type Name = keyof typeof targets;
    const names = Object.keys(targets) as Name[];
    const measured = (...list: Name[]) => list.every((name) => names.includes(name));
    const pacedNames = (['upstream', 'nginx', 'bare', 'sqlite'] as Name[]).filter((name) => measured(name));

    const body = CHAT_BODY;
    // CPU time per request, read from /proc: a figure that contention on a shared machine distorts
    // far less than throughput and latency. Whole processes (every thread, all of nginx's and of
    // WORKERS=auto's processes) and, as the figures before issue 18 were, main threads only.
    const cpu = new Map<Name, { ms: number; mainMs: number; requests: number }>();
    const pacedCpu = new Map<Name, { ms: number; mainMs: number; requests: number }>();
    // For each database: answers below 400 its node gave, and load generator calls (see billingNote).
    const answeredOk = new Map<Database, number>();
    const calls = new Map<Database, number>();
    const measure = async (name: Name, into: typeof cpu, rate?: number, ms = 5000): Promise<LoadResult> => {
      const target: Target = targets[name];
      const pids = target.pids();
      const [before, mainBefore] = [cpuMs(pids, false), cpuMs(pids, true)];
      const result = await httpLoad({
        url: `http://127.0.0.1:${target.port}/v1/chat/completions`,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...target.headers },
        connectionHeaders: target.connectionHeaders,
        body,
        connections: CONNECTIONS,
        durationMs: benchDuration(ms),
        warmupMs: WARMUP_MS,
        rate,
        autocannon: rate === undefined,
      });
      const sum = into.get(name) ?? { ms: 0, mainMs: 0, requests: 0 };
      sum.ms += cpuMs(pids, false) - before;
      sum.mainMs += cpuMs(pids, true) - mainBefore;
      sum.requests += result.answered;
      into.set(name, sum);
      if (target.billedIn) {
        answeredOk.set(target.billedIn, (answeredOk.get(target.billedIn) ?? 0) + result.answeredOk);
        calls.set(target.billedIn, (calls.get(target.billedIn) ?? 0) + 1);
      }
      return result;
    };

    // Passes that count for nothing first. A fresh node's CPU per request falls to a third or a
    // quarter over its first 10-30 s of load on this busy machine, a WORKERS=auto node's the
    // slowest (bench/README.md): each node is warmed until a pass costs no less than 0.9 times the
    // one before (at most 12 passes); the other targets get one.
    const warmPasses = new Map<Name, number>();
    for (const name of names) {
      const passes = (targets[name] as Target).billedIn ? 12 : 1;
      let before = Infinity;
      for (let pass = 0; pass < passes; pass++) {
        warmPasses.set(name, pass + 1);
        const sample = new Map() as typeof cpu;
        await measure(name, sample, undefined, 2000);
        const { ms, requests } = sample.get(name)!;
        if (ms / requests > before * 0.9) break;
        before = ms / requests;
      }
    }
    const runs = new Map<Name, LoadResult[]>(names.map((name) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of names) runs.get(name)!.push(await measure(name, cpu));
    }
    const best = (name: Name) =>
      [...runs.get(name)!].sort((a, b) => a.requestsPerSec - b.requestsPerSec)[Math.floor(ROUNDS / 2)];
    const rps = (name: Name) => Math.round(best(name).requestsPerSec);
    const perRequest = (name: Name, from = cpu) => Math.round((from.get(name)!.ms * 1000) / from.get(name)!.requests);
    const perRequestMain = (name: Name, from = cpu) =>
      Math.round((from.get(name)!.mainMs * 1000) / from.get(name)!.requests);
    const errors = (name: Name) => runs.get(name)!.reduce((n, r) => n + r.errors, 0);

    // Added latency at a rate all of them carry: half of what the slowest managed.
    const rate = measured('sqlite')
      ? Math.round(Math.min(...pacedNames.map((name) => best(name).requestsPerSec)) / 2)
      : 0;
    const paced = new Map<Name, LoadResult[]>(pacedNames.map((name) => [name, []]));
    for (let round = 0; round < (rate > 0 ? ROUNDS : 0); round++) {
      for (const name of pacedNames) paced.get(name)!.push(await measure(name, pacedCpu, rate));
    }
    const medianOf = (name: Name, q: 'p50Ms' | 'p99Ms') =>
      paced
        .get(name)!
        .map((r) => r[q])
        .sort((a, b) => a - b)[Math.floor(ROUNDS / 2)];
    const added = (name: Name, q: 'p50Ms' | 'p99Ms') => round(Math.max(0, medianOf(name, q) - medianOf('upstream', q)));
    const latencyNote = (q: 'p50Ms' | 'p99Ms') =>
      `at ${rate} req/s, ${CONNECTIONS} connections, open loop, median of ${ROUNDS}: ` +
      pacedNames
        .map((name) => `${name === 'sqlite' ? 'quartet' : name} ${medianOf(name, q).toFixed(2)} ms`)
        .join(', ') +
      `; ${pacedNames.reduce((n, name) => n + paced.get(name)!.reduce((m, r) => m + r.errors, 0), 0)} errors`;

    // Every answer is billed once: settled requests against the answers below 400. Requests in
    // flight when a run or its warm-up stops are cut off, and may be settled without an answer.
    const billingNote = async (...dbs: Database[]) => {
      const parts = [];
      for (const db of dbs) {
        const { settled, reserved, disagreeing, accounts } = await billing(db);
        parts.push(
          `${settled} settled for ${answeredOk.get(db) ?? 0} answers (≤ ${(calls.get(db) ?? 0) * 2 * CONNECTIONS} ` +
            `cut off in flight), ${reserved} msat left reserved, ${disagreeing} of ${accounts} accounts' ` +
            'balances disagreeing with their spending',
        );
      }
      return `billing: ${parts.join('; ')}`;
    };
    const cpuNote = (...list: Name[]) =>
      'CPU per request (whole process; main thread): ' +
      list.map((name) => `${name} ${perRequest(name)}; ${perRequestMain(name)} µs`).join(', ');
    const cores = availableParallelism();
    const scaling = async (kind: DatabaseKind, one: Name, auto: Name, node: QuartetNode | undefined) => ({
      name: `proxy: ${CONNECTIONS} accounts, one per connection, ${LABEL[kind]}, WORKERS=auto`,
      value: rps(auto),
      unit: 'req/s',
      anchor: 'the same with WORKERS=1',
      anchorValue: rps(one),
      ratio: round(rps(auto) / rps(one)),
      goal: `scales with the cores (${cores} here, shared with the load and the upstream)`,
      notes:
        `${node!.pids().length} processes; errors ${errors(auto)} / ${errors(one)}; ${cpuNote(auto, one)}; ` +
        `WORKERS=auto ${await billingNote(dbOf(node!))}`,
    });
    // Issue 33: a billed request as `npm start` serves it, against the billed bare proxy under the same load.
    const againstBilledBare = async (
      name: Name,
      what: string,
      notes: string,
      anchor: Name = 'billedBare',
    ): Promise<BenchResult> => ({
      name: `proxy: ${what} against the bare Node proxy with quartet's billing`,
      value: rps(name),
      unit: 'req/s',
      anchor: `bench/billed-bare-proxy.mjs${anchor === 'billedBare' ? '' : `, ${CONNECTIONS} accounts`}`,
      anchorValue: rps(anchor),
      ratio: round(rps(name) / rps(anchor)),
      goal: '>= 0.9',
      notes:
        `${notes}; ${round(rps(name) / rps('bare'))}× the bare proxy; errors ${errors(name)}; ` +
        `${cpuNote(name, anchor, 'bare')}; ${await billingNote(targets[name].billedIn!)}`,
    });
    /** A result, when every target it reads was measured (BENCH_PROXY_ONLY). */
    const ifMeasured = async (list: Name[], result: () => BenchResult | Promise<BenchResult>) =>
      measured(...list) ? [await result()] : [];

    const results: BenchResult[] = [
      ...(await ifMeasured(['sqlite'], async () => ({
        name: `proxy: billed chat completions, SQLite, one account (${CONNECTIONS} connections)`,
        value: rps('sqlite'),
        unit: 'req/s',
        anchor: 'bare Node proxy (bench/bare-node-proxy.mjs)',
        anchorValue: rps('bare'),
        ratio: round(rps('sqlite') / rps('bare')),
        goal: '>= 0.8',
        notes:
          `autocannon, median of ${ROUNDS} alternating runs; upstream alone ${rps('upstream')} req/s; ` +
          `saturated p99 quartet ${best('sqlite').p99Ms} ms, bare ${best('bare').p99Ms} ms; ` +
          `errors ${errors('sqlite')}; ${cpuNote('sqlite', 'bare')}`,
      }))),
      ...(await ifMeasured([], async () => ({
        name: "proxy: the bare Node proxy with quartet's durable billing alone, SQLite, one account",
        value: rps('billedBare'),
        unit: 'req/s',
        anchor: 'bare Node proxy',
        anchorValue: rps('bare'),
        ratio: round(rps('billedBare') / rps('bare')),
        notes:
          'what billing every request durably leaves of the bare proxy: the most quartet could reach; ' +
          `errors ${errors('billedBare')}; ${cpuNote('billedBare', 'bare')}; ${await billingNote(billedBareDb)}`,
      }))),
      ...(await ifMeasured(['sqlite'], async () => ({
        name: "proxy: billed chat completions against the bare Node proxy with quartet's billing",
        value: rps('sqlite'),
        unit: 'req/s',
        anchor: 'bench/billed-bare-proxy.mjs (the same billing, no framework or features)',
        anchorValue: rps('billedBare'),
        ratio: round(rps('sqlite') / rps('billedBare')),
        notes: 'what the HTTP stack, validation, pricing, headers, logging and metrics leave of it',
      }))),
      ...(await ifMeasured(['sqlite', 'portkey'], async () => ({
        name: "proxy: billed chat completions against Portkey's gateway",
        value: rps('sqlite'),
        unit: 'req/s',
        anchor: '@portkey-ai/gateway 1.15.2, no billing, x-portkey-custom-host',
        anchorValue: rps('portkey'),
        ratio: round(rps('sqlite') / rps('portkey')),
        goal: '>= 5',
        notes: `Portkey errors ${errors('portkey')}; ${cpuNote('portkey')}`,
      }))),
      ...(await ifMeasured(['sqlite', 'nginx'], async () => ({
        name: 'proxy: billed chat completions against nginx (the ceiling)',
        value: rps('sqlite'),
        unit: 'req/s',
        anchor: 'nginx proxy_pass to the same upstream',
        anchorValue: rps('nginx'),
        ratio: round(rps('sqlite') / rps('nginx')),
        notes: `bare Node proxy ${round(rps('bare') / rps('nginx'))}× nginx; ${cpuNote('nginx')}`,
      }))),
      ...(await ifMeasured(['sqlite'], async () => ({
        name: 'proxy: CPU per billed request, SQLite (whole process)',
        value: perRequest('sqlite'),
        unit: 'µs',
        anchor: 'bare Node proxy',
        anchorValue: perRequest('bare'),
        ratio: round(perRequest('sqlite') / perRequest('bare')),
        notes:
          'lower is better (ratio quartet / bare); at saturation, over all throughput rounds; ' +
          `main threads: ${perRequestMain('sqlite')} / ${perRequestMain('bare')} µs; ` +
          `at ${rate} req/s: ${perRequest('sqlite', pacedCpu)} / ${perRequest('bare', pacedCpu)} µs; ` +
          `warm-up passes of 2 s: ${names.map((name) => `${name} ${warmPasses.get(name)}`).join(', ')}`,
      }))),
      ...(await ifMeasured(['sqlite', 'postgres'], async () => ({
        name: 'proxy: billed chat completions, PostgreSQL, one hot account',
        value: rps('postgres'),
        unit: 'req/s',
        anchor: 'the same on SQLite',
        anchorValue: rps('sqlite'),
        ratio: round(rps('postgres') / rps('sqlite')),
        goal: '>= 0.5',
        notes:
          `errors ${errors('postgres')}; ${cpuNote('postgres')}; ` +
          `WORKERS=1 ${await billingNote(targets.sqlite.billedIn!, targets.postgres.billedIn!)}`,
      }))),
      ...(await ifMeasured(['sqliteMany', 'sqliteManyAuto'], () =>
        scaling('sqlite', 'sqliteMany', 'sqliteManyAuto', started.get('sqlite auto proxy')),
      )),
      ...(await ifMeasured(['postgresMany', 'postgresManyAuto'], () =>
        scaling('postgres', 'postgresMany', 'postgresManyAuto', started.get('postgres auto proxy')),
      )),
      ...(await ifMeasured(['sqlite', 'nginx'], async () => ({
        name: 'proxy: added latency p50 (billing on, SQLite)',
        value: added('sqlite', 'p50Ms'),
        unit: 'ms',
        anchor: 'nginx added p50',
        anchorValue: added('nginx', 'p50Ms'),
        notes: latencyNote('p50Ms'),
      }))),
      ...(await ifMeasured(['sqlite', 'nginx'], async () => ({
        name: 'proxy: added latency p99 (billing on, SQLite)',
        value: added('sqlite', 'p99Ms'),
        unit: 'ms',
        anchor: 'nginx added p99',
        anchorValue: added('nginx', 'p99Ms'),
        notes: `${latencyNote('p99Ms')}; bare Node proxy added ${added('bare', 'p99Ms')} ms`,
      }))),
      ...(await ifMeasured(['start'], () =>
        againstBilledBare(
          'start',
          'billed chat completions as `npm start` serves them (every service, info log, metrics), SQLite, one account',
          'issue 33',
        ),
      )),
      ...(await ifMeasured(['startMany'], () =>
        againstBilledBare(
          'startMany',
          `the same, ${CONNECTIONS} accounts, one per connection`,
          `the billed bare proxy with ${CONNECTIONS} accounts too (${round(rps('startMany') / rps('billedBare'))}× ` +
            'its one-account figure)',
          'billedBareMany',
        ),
      )),
      ...(await ifMeasured(['operator'], () =>
        againstBilledBare(
          'operator',
          'the same with the features an operator turns on (three providers of the model, a child key paying)',
          'issue 33',
        ),
      )),
      ...(await ifMeasured(['start', 'portkey'], () => ({
        name: "proxy: billed chat completions as `npm start` serves them, against Portkey's gateway",
        value: rps('start'),
        unit: 'req/s',
        anchor: '@portkey-ai/gateway 1.15.2, no billing, x-portkey-custom-host',
        anchorValue: rps('portkey'),
        ratio: round(rps('start') / rps('portkey')),
        goal: '>= 5',
        notes: cpuNote('start', 'portkey'),
      }))),
    ];
    return results;
  } finally {
    const exits = nodes.map((node) => node.process.exited);
    for (const node of nodes) node.process.child.kill('SIGTERM');
    upstream.child.kill('SIGTERM');
    nginx?.kill('SIGQUIT');
    bare.kill('SIGTERM');
    billedBare.kill('SIGTERM');
    portkey?.kill('SIGTERM');
    await Promise.race([Promise.all([...exits, upstream.exited]), new Promise((resolve) => setTimeout(resolve, 5000))]);
    for (const db of databases) await db.close();
    rmSync(dir, { recursive: true, force: true });
    for (const node of nodes) {
      if (node.pgName) await adminQuery(`drop database if exists ${node.pgName} with (force)`);
    }
  }
}

async function adminQuery(text: string) {
  const client = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** User + system CPU time of these processes in ms, from /proc: all their threads, or main threads only. */
function cpuMs(pids: number[], mainThreadOnly: boolean): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
    } catch {
      // a process that is gone used no more CPU
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

/** Waits until these processes are idle (below a tenth of a core for half a second; at most a minute). */
async function settle(pids: () => number[]): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (let before = cpuMs(pids(), false); Date.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = cpuMs(pids(), false);
    if (now - before < 50) return;
    before = now;
  }
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
