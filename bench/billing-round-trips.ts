// Billing alone on PostgreSQL (issue 18): 50 callers reserve and settle in a loop through
// src/proxy/billing/billing.ts, on one hot account or spread over many, counting the statements sent to
// the server (each one a round trip) per request. No HTTP: what the billing steps cost by themselves.
//   node --import tsx bench/billing-round-trips.ts [accounts=1] [seconds=5]
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import pg from 'pg';
import { parseDatabaseUrl } from '../src/config.js';
import { openDatabase } from '../src/db/index.js';
import { migrate } from '../src/db/migrate.js';
import { Billing } from '../src/proxy/billing/billing.js';
import type { ForwardConfig } from '../src/proxy/common/forward-config.js';
import { serviceMigrations } from '../src/services.js';

const PG_SERVER = process.env.BENCH_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
const CALLERS = 50;
const accounts = Number(process.argv[2] ?? 1);
const seconds = Number(process.argv[3] ?? 5);

// Every statement a pg client sends, counted where it is sent.
let statements = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  statements++;
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

const admin = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
await admin.connect();
const name = `quartet_bench_${randomBytes(4).toString('hex')}`;
await admin.query(`create database ${name}`);
const db = await openDatabase(parseDatabaseUrl(`${PG_SERVER}/${name}`));
try {
  await migrate(db, serviceMigrations);
  const ids: number[] = [];
  for (let i = 0; i < accounts; i++) {
    const row = await db.kysely
      .insertInto('proxy_accounts')
      .values({
        key_hash: randomBytes(32).toString('hex'),
        balance_msat: 1e15,
        mint_url: 'http://127.0.0.1:3338',
        unit: 'sat',
        created_at: Date.now(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    ids.push(row.id);
  }
  const billing = new Billing(db, { staleReservationMs: 600_000 } as ForwardConfig, console);
  const cost = { inputMsat: 200, outputMsat: 300, requestMsat: 0, totalMsat: 500 };
  let next = 0;
  let requests = 0;
  const run = async (until: number, count: boolean) => {
    const caller = async () => {
      while (performance.now() < until) {
        const request = {
          accountId: ids[next++ % ids.length],
          amountFor: () => 1000,
          requestId: 'bench',
          path: '/v1/chat/completions',
          model: 'openai/gpt-4o-mini',
          stream: false,
          payment: 'key' as const,
        };
        const { reservation } = await billing.reserve(request);
        if (!reservation) throw new Error('refused');
        const settlement = { cost, usage: { promptTokens: 4, completionTokens: 6 }, usageSource: 'upstream' as const };
        await billing.settle(reservation, { ...settlement, upstreamStatus: 200 });
        if (count) requests++;
      }
    };
    await Promise.all(Array.from({ length: CALLERS }, caller));
  };
  await run(performance.now() + 1000, false);
  statements = 0;
  const started = performance.now();
  const cpu = process.cpuUsage();
  const serverBefore = backendsCpuMs(name);
  await run(started + seconds * 1000, true);
  const elapsed = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const server = backendsCpuMs(name) - serverBefore;
  await billing.close();
  console.log(
    `${accounts} account(s): ${Math.round(requests / elapsed)} requests/s (reserve + settle), ` +
      `${(statements / requests).toFixed(2)} statements a request, ` +
      `${Math.round((used.user + used.system) / requests)} µs of this process's CPU a request, ` +
      `${Math.round((server * 1000) / requests)} µs of the server's backends, ` +
      `load ${loadavg()[0].toFixed(1)}`,
  );
} finally {
  await db.close();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();
}

/** CPU time (ms) of the PostgreSQL backends serving database `name` (this machine's server), from /proc. */
function backendsCpuMs(name: string): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`: postgres ${name} `)) continue;
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
    } catch {
      // gone
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}
