// On an SQLite file the usage job runs in a thread of its own (src/proxy/usage/rollup-thread.ts):
// the main thread's connection runs none of its statements, the rollup counts every row once, a
// failing run is reported and tried again, and after stop() nothing runs.
import { afterEach, describe, expect, it } from 'vitest';
import { parseDatabaseUrl } from '../../src/config.js';
import { openDatabase, type Database } from '../../src/db/index.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { UsageAnalytics } from '../../src/proxy/usage/usage.js';
import { serviceMigrations } from '../../src/services.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { serveInTempDir, waitForHttp } from '../support/process.js';

const ROWS = 9000;

describe('the usage job on an SQLite file', () => {
  let database: TestDatabase | undefined;
  let db: Database | undefined;
  afterEach(async () => {
    await db?.close();
    await database?.drop();
  });

  async function ledger(): Promise<Database> {
    database = await createTestDatabase('sqlite');
    const config = parseDatabaseUrl(database.url);
    await migrateDatabase(config, serviceMigrations);
    db = await openDatabase(config);
    const now = Date.now();
    await db.kysely
      .insertInto('proxy_accounts')
      .values({
        key_hash: 'h',
        key_prefix: 'sk-',
        balance_msat: 0,
        mint_url: 'http://mint',
        unit: 'sat',
        created_at: now,
      })
      .execute();
    for (let from = 0; from < ROWS; from += 1000) {
      const rows = Array.from({ length: 1000 }, (_, i) => ({
        account_id: 1,
        request_id: `r-${from + i}`,
        path: '/v1/chat/completions',
        model: (from + i) % 3 === 0 ? 'model-a' : 'model-b',
        stream: 0,
        payment: 'key' as const,
        status: 'settled' as const,
        reserved_msat: 10_000,
        charged_msat: 7,
        cost_msat: 7,
        prompt_tokens: 2,
        completion_tokens: 3,
        usage_source: 'upstream' as const,
        upstream_status: 200,
        error: null,
        created_at: now - 60_000,
        heartbeat_at: now - 60_000,
        settled_at: now - 59_000,
        provider: 'p',
      }));
      await db.kysely.insertInto('proxy_requests').values(rows).execute();
    }
    return db;
  }

  it('rolls the ledger up in its own thread: the main connection runs none of it', async () => {
    const db = await ledger();
    // The kind of every query built on the main thread's connection (the rollup's are selects,
    // inserts, updates and deletes).
    const mainStatements: string[] = [];
    const recorded: Database = {
      ...db,
      kysely: db.kysely.withPlugin({
        transformQuery: (args) => {
          mainStatements.push(args.node.kind);
          return args.node;
        },
        transformResult: async (args) => args.result,
      }),
    };
    const errors: unknown[] = [];
    const usage = new UsageAnalytics(recorded, { error: (obj) => errors.push(obj) }, 20);
    usage.start();
    const lastId = async () =>
      (await db.kysely.selectFrom('proxy_usage_state').select('last_id').executeTakeFirstOrThrow()).last_id;
    const deadline = Date.now() + 60_000;
    while ((await lastId()) < ROWS && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await lastId()).toBe(ROWS);
    const totals = await db.kysely
      .selectFrom('proxy_usage_rollup')
      .select((eb) => [
        eb.fn.sum<number>('requests').as('requests'),
        eb.fn.sum<number>('charged_msat').as('charged'),
        eb.fn.sum<number>('input_tokens').as('input'),
      ])
      .where('account_id', '=', 0)
      .executeTakeFirstOrThrow();
    expect(totals).toEqual({ requests: ROWS, charged: ROWS * 7, input: ROWS * 2 });
    await usage.stop();
    expect(errors).toEqual([]);
    expect(mainStatements).toEqual([]);
  });

  it('reports a run that fails and goes on; stop() waits for the thread', async () => {
    const db = await ledger();
    const errors: unknown[] = [];
    const usage = new UsageAnalytics(db, { error: (obj) => errors.push(obj) }, 20);
    // The job's state row gone: each run fails until it is back.
    await db.kysely.deleteFrom('proxy_usage_state').execute();
    usage.start();
    for (let i = 0; i < 600 && errors.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(errors[0]).toEqual({ err: expect.objectContaining({ message: expect.stringMatching(/no result/i) }) });
    await db.kysely.insertInto('proxy_usage_state').values({ id: 1, last_id: 0, pruned_at: 0 }).execute();
    const deadline = Date.now() + 30_000;
    const lastId = async () =>
      (await db.kysely.selectFrom('proxy_usage_state').select('last_id').executeTakeFirstOrThrow()).last_id;
    while ((await lastId()) < ROWS && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await lastId()).toBe(ROWS);
    await usage.stop();
    // Stopped: no run starts any more.
    const reported = errors.length;
    await db.kysely.deleteFrom('proxy_usage_state').execute();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(errors.length).toBe(reported);
  });

  // A thread given V8's flags explicitly refuses to start (ERR_WORKER_INVALID_EXEC_ARGV): a node run
  // with --perf-basic-prof ended at its start when the usage thread was given the process's flags.
  it('starts in a node run with V8 flags of its own', async () => {
    const served = await serveInTempDir({ SERVICES: 'proxy', DATABASE_URL: 'sqlite:./data/quartet.db' }, [
      '--expose-gc',
    ]);
    try {
      await waitForHttp(`http://127.0.0.1:${served.port}/`);
      expect((await fetch(`http://127.0.0.1:${served.port}/v1/models`)).status).toBe(200);
      expect(served.run.child.exitCode).toBe(null);
    } finally {
      served.stop();
    }
  });
});
