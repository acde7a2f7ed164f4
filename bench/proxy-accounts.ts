// Many accounts across processes (issue 18): billed chat completions spread over many accounts,
// against a node of one process and one of a process per core (WORKERS), on SQLite or PostgreSQL.
// Nothing may serialize across accounts (a global lock, one shared row updated per request): with
// the load spread, throughput should grow with the processes. `manyAccountsThroughput` is one
// measurement, for proxy.bench.ts to call; run alone, this file measures the four combinations:
//   node --import tsx bench/proxy-accounts.ts [rounds]
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { parseDatabaseUrl } from '../src/config.js';
import { openDatabase } from '../src/db/index.js';
import { childPids, freePort, spawnQuartet, waitForHttp } from '../test/support/process.js';
import { benchDuration, httpLoad } from './harness.js';

export interface ManyAccountsOptions {
  database: 'sqlite' | 'postgres';
  /** The node's WORKERS: a number or 'auto'. */
  workers: string;
  /** Accounts the requests go round (each request takes the next key). */
  accounts?: number;
  connections?: number;
  durationMs?: number;
}

export interface ManyAccountsResult {
  requestsPerSec: number;
  /** CPU of the node's processes (main threads) per request. */
  cpuUsPerRequest: number;
  /** Requests that were not answered 200. */
  errors: number;
  /** Requests answered 200, warm-up included, and the ledger rows settled: equal when billing is exact. */
  answered: number;
  settled: number;
}

const MINT = 'http://127.0.0.1:3338';
const PG_SERVER = process.env.BENCH_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432';

/** One closed-loop measurement on a fresh database and node, after a warm-up of a second. */
export async function manyAccountsThroughput(options: ManyAccountsOptions): Promise<ManyAccountsResult> {
  const { database, workers, accounts = 200, connections = 50 } = options;
  const dir = mkdtempSync(join(tmpdir(), 'quartet-accounts-bench-'));
  const pgName = `quartet_bench_${randomBytes(4).toString('hex')}`;
  if (database === 'postgres') await adminQuery(`create database ${pgName}`);
  const databaseUrl = database === 'postgres' ? `${PG_SERVER}/${pgName}` : `sqlite:${join(dir, 'bench.db')}`;
  const [upstreamPort, nodePort] = [await freePort(), await freePort()];
  const upstream = spawnQuartet(['fake-upstream', '--port', String(upstreamPort)], { discardStdout: true });
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
  try {
    await waitForHttp(`http://127.0.0.1:${nodePort}/healthz`);
    await waitForHttp(`http://127.0.0.1:${upstreamPort}/v1/models`);
    const db = await openDatabase(parseDatabaseUrl(databaseUrl));
    const keys = Array.from({ length: accounts }, () => `sk-${randomBytes(24).toString('hex')}`);
    await db.kysely
      .insertInto('proxy_accounts')
      .values(
        keys.map((key) => ({
          key_hash: createHash('sha256').update(key).digest('hex'),
          key_prefix: key.slice(0, 12),
          balance_msat: 1e15,
          mint_url: MINT,
          unit: 'sat',
          created_at: Date.now(),
          last_used_at: null,
        })),
      )
      .execute();
    const load = loadOver(keys, `http://127.0.0.1:${nodePort}`, connections);
    const warmUp = await load(1000);
    // Every process of the node (the primary and its workers), read after the warm-up has started them.
    const pids = [node.child.pid!, ...childPids(node.child.pid!)];
    const before = cpuMs(pids);
    const result = await load(benchDuration(options.durationMs ?? 10_000));
    const cpu = cpuMs(pids) - before;
    const answered = warmUp.requests - warmUp.errors + result.requests - result.errors;
    const settled = Number(
      (
        await db.kysely
          .selectFrom('proxy_requests')
          .select(db.kysely.fn.countAll<number>().as('n'))
          .where('status', '=', 'settled')
          .executeTakeFirstOrThrow()
      ).n,
    );
    await db.close();
    return {
      requestsPerSec: Math.round(result.requestsPerSec),
      cpuUsPerRequest: Math.round((cpu * 1000) / Math.max(1, result.requests)),
      errors: warmUp.errors + result.errors,
      settled,
      answered,
    };
  } finally {
    node.child.kill('SIGTERM');
    upstream.child.kill('SIGTERM');
    await Promise.race([
      Promise.all([node.exited, upstream.exited]),
      new Promise((resolve) => setTimeout(resolve, 5000)),
    ]);
    rmSync(dir, { recursive: true, force: true });
    if (database === 'postgres') await adminQuery(`drop database if exists ${pgName} with (force)`);
  }
}

/** Closed-loop load whose requests take the keys in turn. */
function loadOver(keys: string[], origin: string, connections: number) {
  const body = JSON.stringify({
    model: 'openai/gpt-4o-mini',
    messages: [{ role: 'user', content: 'Say something short.' }],
    max_tokens: 16,
  });
  return (ms: number) =>
    httpLoad({
      url: `${origin}/v1/chat/completions`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      authorizations: keys.map((key) => `Bearer ${key}`),
      body,
      connections,
      durationMs: ms,
      warmupMs: 0,
    });
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

/** User + system CPU time of these processes' main threads, in ms, from /proc. */
function cpuMs(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
    } catch {
      // a process that is gone used no more CPU
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rounds = Number(process.argv[2] ?? 3);
  const databases = (process.env.BENCH_DATABASES ?? 'sqlite,postgres').split(',') as ManyAccountsOptions['database'][];
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
  for (const database of databases) {
    const figures: Record<string, number[]> = { '1': [], auto: [] };
    // The two setups alternate, so drift hits both alike.
    for (let round = 0; round < rounds; round++) {
      for (const workers of ['1', 'auto']) {
        const result = await manyAccountsThroughput({ database, workers });
        figures[workers].push(result.requestsPerSec);
        const load = (await import('node:os')).loadavg()[0].toFixed(1);
        console.log(`${database} WORKERS=${workers}: ${JSON.stringify(result)} load ${load}`);
      }
    }
    const [one, auto] = [median(figures['1']), median(figures.auto)];
    console.log(`${database}: median WORKERS=1 ${one} req/s, WORKERS=auto ${auto} req/s = ${(auto / one).toFixed(2)}×`);
  }
}
