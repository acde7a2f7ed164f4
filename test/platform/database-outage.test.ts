// PostgreSQL going away under load (a server restart, a failover, a pooler cutting connections),
// as pg_terminate_backend and ALLOW_CONNECTIONS false do it: the process stays up, /healthz
// answers, every request that needs the database gets a 503 with Retry-After in its service's
// shape, the pool reconnects by itself, and every billed request is settled or released once.
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/databases.js';
import { request } from '../support/http.js';
import { admin, databaseName, pause, terminateBackends, timeUntil } from '../support/outage.js';
import { startFakeUpstream } from '../../src/fakeupstream/index.js';
import { chatBody, postJson, startNode, testCost, writeModelsFile, type Node } from '../proxy/forward-helpers.js';
import { Client, QUOTES_ENV } from '../quotes/helpers.js';
import { childPids, serveInTempDir, waitForHttp } from '../support/process.js';

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

describe.runIf(postgresAvailable)('PostgreSQL going away', () => {
  let database: TestDatabase;
  let node: Node;
  let quoter: Client;
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    node = await startNode('postgres', {
      database,
      env: { ...QUOTES_ENV, SERVICES: 'proxy,tasks,quotes,docs', PROXY_UPSTREAM_TIMEOUT_MS: '5000' },
    });
    quoter = await Client.create(node.url);
  });
  afterAll(async () => {
    await admin(`alter database ${databaseName(database)} allow_connections true`).catch(() => {});
    await node?.close();
    await database?.drop();
  });

  it('answers 503 meanwhile, serves again by itself, and bills every request exactly once', async () => {
    const name = databaseName(database);
    const funded = 10_000_000;
    const keys = await Promise.all(Array.from({ length: 8 }, () => node.account(funded)));
    const statuses = new Map<number, number>();
    const wrong: string[] = [];
    let charged = 0;
    const loadState = { running: true };
    // Half the callers stream: a stream in flight when the database goes is finished, and charged
    // once the database is back (a hung or cut stream is a failure here).
    const load = keys.map(async (key, i) => {
      const streams = i % 2 === 1;
      while (loadState.running) {
        try {
          const answer = await Promise.race([
            postJson(`${node.url}/v1/chat/completions`, chatBody({ stream: streams }), auth(key)),
            pause(20_000).then(() => Promise.reject(new Error(`no answer within 20 s (stream: ${streams})`))),
          ]);
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          if (answer.status === 503) {
            if (!answer.headers.get('retry-after') || !answer.json?.error?.message) wrong.push(`503 ${answer.text}`);
          } else if (answer.status !== 200) wrong.push(`${answer.status} ${answer.text.slice(0, 200)}`);
          else if (streams && !answer.text.trimEnd().endsWith('data: [DONE]')) wrong.push('a stream cut short');
          else if (!streams) charged += testCost(answer.json.usage);
        } catch (error) {
          wrong.push(String(error));
        }
      }
    });
    await pause(500);
    await admin(`alter database ${name} allow_connections false`);
    await terminateBackends(name);
    await pause(1000);

    // Down: the process answers; what needs the database says so, in each service's shape.
    expect((await request(`${node.url}/healthz`)).status).toBe(200);
    expect((await request(`${node.url}/readyz`)).status).toBe(503);
    const register = await postJson(`${node.url}/api/users/register`, {
      email: 'outage@example.test',
      username: 'outage',
      password: 'a long outage password',
      first_name: 'Out',
      last_name: 'Age',
    });
    expect(register.status).toBe(503);
    expect(register.headers.get('content-type')).toContain('application/problem+json');
    expect(register.headers.get('retry-after')).toMatch(/^\d+$/);
    const projects = await quoter.get('/1/projects');
    expect(projects.status).toBe(503);
    expect(projects.json.meta.status).toBe(503);
    expect(projects.headers.get('retry-after')).toMatch(/^\d+$/);
    const balance = await request(`${node.url}/v1/wallet/info`, 'GET', { headers: auth(keys[0]) });
    expect(balance.status).toBe(503);
    expect(balance.json.error.code).toBe('database_unavailable');
    await pause(1000);

    // Back: every service serves again within 5 s, without a restart.
    await admin(`alter database ${name} allow_connections true`);
    const ready = await timeUntil('ready', async () => (await request(`${node.url}/readyz`)).status === 200);
    const billed = await timeUntil(
      'billed',
      async () => (await postJson(`${node.url}/v1/chat/completions`, chatBody(), auth(keys[0]))).status === 200,
    );
    const quotes = await timeUntil('quotes', async () => (await quoter.get('/1/projects')).status === 200);
    expect(Math.max(ready, billed, quotes)).toBeLessThan(5000);

    loadState.running = false;
    await Promise.all(load);
    expect(wrong).toEqual([]);
    expect(statuses.get(503)).toBeGreaterThan(0);
    expect(statuses.get(200)).toBeGreaterThan(0);

    // Every reservation settled or released, once; every balance fell by exactly what was charged.
    await timeUntil('reservations finished', async () => {
      const ledger = await node.ledger();
      return ledger.every((row) => row.status !== 'reserved');
    });
    let spent = 0;
    for (const key of keys) {
      const account = await node.balance(key);
      expect(account.reserved).toBe(0);
      expect(account.balance + account.spent).toBe(funded);
      spent += account.spent;
    }
    const ledger = await node.ledger();
    const settled = ledger.filter((row) => row.status === 'settled');
    expect(settled.reduce((sum, row) => sum + Number(row.charged_msat), 0)).toBe(spent);
    expect(spent).toBeGreaterThanOrEqual(charged);
  }, 120_000);
});

describe.runIf(postgresAvailable)('PostgreSQL going away under WORKERS', () => {
  it('keeps the primary and every worker up under billed load, and serves again by itself', async () => {
    const database = await createTestDatabase('postgres');
    const name = databaseName(database);
    const upstream = await startFakeUpstream({ apiKey: 'operator-key' });
    const { run, port, stop } = await serveInTempDir({
      SERVICES: 'proxy',
      WORKERS: '2',
      DATABASE_URL: database.url,
      PROXY_UPSTREAM_URL: upstream.url,
      PROXY_UPSTREAM_KEY: 'operator-key',
      PROXY_BTC_USD: '100000',
      PROXY_MODELS_FILE: writeModelsFile(),
      PROXY_MINTS: 'http://127.0.0.1:9',
    });
    const base = `http://127.0.0.1:${port}`;
    const load = { running: true, statuses: new Map<number, number>() };
    try {
      await waitForHttp(`${base}/healthz`);
      await timeUntil('both workers', async () => childPids(run.child.pid!, 'src/cli.ts').length === 2);
      const workers = childPids(run.child.pid!, 'src/cli.ts');
      const key = await fundedKey(database.url, 100_000_000);
      const ready = () => request(`${base}/readyz`, 'GET', { headers: { connection: 'close' } });
      // Billed requests on new connections, so that both workers serve them, while the database goes.
      const loops = Array.from({ length: 6 }, async () => {
        while (load.running) {
          // 0: the connection broke without an answer (a worker died).
          const status = await postJson(`${base}/v1/chat/completions`, chatBody(), {
            ...auth(key),
            connection: 'close',
          }).then(
            (answer) => answer.status,
            () => 0,
          );
          load.statuses.set(status, (load.statuses.get(status) ?? 0) + 1);
        }
      });
      await pause(500);
      await admin(`alter database ${name} allow_connections false`);
      await terminateBackends(name);
      await pause(1500);
      expect((await ready()).status).toBe(503);
      expect((await request(`${base}/healthz`, 'GET', { headers: { connection: 'close' } })).status).toBe(200);
      await admin(`alter database ${name} allow_connections true`);
      // Every worker serves again: four answers in a row (two per worker) from the database.
      const back = await timeUntil('every worker back', async () => {
        for (let i = 0; i < 4; i++) if ((await ready()).status !== 200) return false;
        return true;
      });
      load.running = false;
      await Promise.all(loops);
      expect(back).toBeLessThan(5000);
      expect([...load.statuses.keys()].sort()).toEqual([200, 503]);
      expect(childPids(run.child.pid!, 'src/cli.ts')).toEqual(workers);
      expect(run.child.exitCode).toBeNull();
      expect(run.output()).not.toMatch(/worker stopped|Unhandled|uncaught/i);
    } finally {
      load.running = false;
      await admin(`alter database ${name} allow_connections true`).catch(() => {});
      stop();
      await upstream.close();
      await database.drop();
    }
  }, 120_000);
});

/** An account of the proxy node holding `msat`, written straight into its database; its key. */
async function fundedKey(url: string, msat: number): Promise<string> {
  const key = `sk-${randomBytes(24).toString('hex')}`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      `insert into proxy_accounts (key_hash, key_prefix, balance_msat, mint_url, unit, created_at)
       values ($1, $2, $3, 'http://127.0.0.1:9', 'sat', $4)`,
      [createHash('sha256').update(key).digest('hex'), key.slice(0, 12), msat, Date.now()],
    );
  } finally {
    await client.end();
  }
  return key;
}
