import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDatabaseUrl } from '../../src/config.js';
import { columnsOf, insertRows, updateRows } from '../../src/db/bulk.js';
import { openDatabase, writeTransaction, type Database } from '../../src/db/index.js';
import { migrate } from '../../src/db/migrate.js';
import { platformMigrations } from '../../src/db/platform-migrations.js';
import { serviceMigrations } from '../../src/services.js';
import { prepared, type Params } from '../../src/db/prepared.js';
import { hitRateLimit, resetRateLimit } from '../../src/http/rate-limit.js';
import { createTestDatabase, databaseKinds, PG_ADMIN_URL, type TestDatabase } from '../support/databases.js';
import { spawnQuartet } from '../support/process.js';
import { startTestServer } from '../support/server.js';

describe.each(databaseKinds)('storage on %s', (kind) => {
  let database: TestDatabase;
  let first: Database;
  let second: Database;
  beforeAll(async () => {
    database = await createTestDatabase(kind);
    first = await openDatabase(parseDatabaseUrl(database.url));
    second = await openDatabase(parseDatabaseUrl(database.url));
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await database?.drop();
  });

  it('applies every migration once, forward only, also when two processes start together', async () => {
    const runs = [0, 1].map(() => spawnQuartet(['migrate'], { env: { DATABASE_URL: database.url } }));
    expect(await Promise.all(runs.map((r) => r.exited))).toEqual([0, 0]);
    const outputs = runs.map((r) => r.output()).join('\n');
    expect(outputs).toMatch(/applied: /);
    expect(outputs).toMatch(/database is up to date/);
    expect(await migrate(first, serviceMigrations)).toEqual([]);
    const recorded = await sql<{ name: string }>`select name from quartet_migrations order by name`.execute(
      first.kysely,
    );
    expect(recorded.rows.map((r) => r.name)).toEqual(
      [...platformMigrations, ...serviceMigrations].map((m) => m.name).sort(),
    );
  });

  it('`quartet migrate` reports an up-to-date database', async () => {
    const run = spawnQuartet(['migrate'], { env: { DATABASE_URL: database.url } });
    expect(await run.exited).toBe(0);
    expect(run.output()).toMatch(/database is up to date/);
  });

  it('runs a prepared query with new values each time, bound as parameters, in and out of a transaction', async () => {
    await migrate(first, serviceMigrations);
    const bump = prepared((p: Params<{ key: string; by: number; now: number }>, db) =>
      db
        .insertInto('rate_limits')
        .values({ key: p.key, hits: p.by, window_start: p.now })
        .onConflict((conflict) => conflict.column('key').doUpdateSet({ hits: sql<number>`rate_limits.hits + ${p.by}` }))
        .returning(['key', 'hits']),
    );
    const key = "prepared'); drop table rate_limits; --";
    expect((await bump.run(first.kysely, { key, by: 2, now: 1 })).rows).toEqual([{ key, hits: 2 }]);
    const inTransaction = await first.kysely.transaction().execute((trx) => bump.run(trx, { key, by: 5, now: 1 }));
    expect(inTransaction.rows).toEqual([{ key, hits: 7 }]);
    expect((await bump.run(second.kysely, { key: 'other', by: 1, now: 1 })).rows).toEqual([{ key: 'other', hits: 1 }]);
    await expect(bump.run(first.kysely, { key, by: 1 } as never)).rejects.toThrow(/no value for parameter "now"/);
  });

  it('writes many rows a statement: inserts, conditional and combined updates, bound, rows returned', async () => {
    await migrate(first, serviceMigrations);
    const hostile = "bulk'); drop table rate_limits; --";
    const columns = columnsOf('rate_limits', { key: 'text', hits: 'integer', window_start: 'bigint' });
    const inserted = await insertRows(
      first.kysely,
      first.dialect,
      'rate_limits',
      columns,
      ['bulk:a', 1, 100, hostile, 2, 200, 'bulk:c', 1, 300],
      ['key'],
    );
    expect(inserted.map((row) => row.key)).toEqual(['bulk:a', hostile, 'bulk:c']);
    const changed = await updateRows(
      first.kysely,
      first.dialect,
      'rate_limits',
      [columns[0]],
      [
        { ...columns[1], combine: 'add' },
        { ...columns[2], combine: 'unless-null' },
      ],
      ['bulk:a', 5, null, hostile, 5, 999, 'bulk:c', -1, 301, 'bulk:none', 1, 1],
      { where: 't."hits" < 2', returning: ['key', 'hits', 'window_start'] },
    );
    expect(changed.map((row) => [row.key, Number(row.hits), Number(row.window_start)]).sort()).toEqual([
      ['bulk:a', 6, 100],
      ['bulk:c', 0, 301],
    ]);
    const stored = await first.kysely
      .selectFrom('rate_limits')
      .select(['key', 'hits'])
      .where('key', '=', hostile)
      .executeTakeFirstOrThrow();
    expect(Number(stored.hits)).toBe(2);
    expect(await updateRows(first.kysely, first.dialect, 'rate_limits', [columns[0]], [columns[1]], [])).toEqual([]);
  });

  it('keeps nothing of a write transaction that fails', async () => {
    await migrate(first, serviceMigrations);
    const attempt = writeTransaction(first, async (trx) => {
      await trx.insertInto('rate_limits').values({ key: 'tx:kept?', hits: 1, window_start: 1 }).execute();
      throw new Error('failed after a write');
    });
    await expect(attempt).rejects.toThrow('failed after a write');
    expect(await first.kysely.selectFrom('rate_limits').select('key').where('key', '=', 'tx:kept?').execute()).toEqual(
      [],
    );
    expect(
      await writeTransaction(
        first,
        async (trx) => (await trx.selectFrom('rate_limits').select('key').where('key', '=', 'bulk:a').execute()).length,
      ),
    ).toBe(1);
  });

  if (kind === 'sqlite') {
    it('waits for another process holding the write lock without stopping the event loop', async () => {
      await migrate(first, serviceMigrations);
      const config = parseDatabaseUrl(database.url);
      const other = new BetterSqlite3(config.kind === 'sqlite' ? config.file : '');
      try {
        // Another process mid-transaction. SQLite's own busy handler would wait for it in this
        // thread, so the timer below, which ends that transaction, could never run.
        other.exec('begin immediate');
        other.prepare('insert into rate_limits (key, hits, window_start) values (?, 1, 1)').run('lock:first');
        setTimeout(() => other.exec('commit'), 50);
        const order = await writeTransaction(first, async (trx) => {
          await trx.insertInto('rate_limits').values({ key: 'lock:second', hits: 1, window_start: 2 }).execute();
          return trx
            .selectFrom('rate_limits')
            .select('key')
            .where('key', 'like', 'lock:%')
            .orderBy('window_start')
            .execute();
        });
        expect(order.map((row) => row.key)).toEqual(['lock:first', 'lock:second']);
      } finally {
        other.close();
      }
    });
  }

  it('counts rate-limit hits exactly across two connections hitting at once', async () => {
    const rule = { limit: 30, windowMs: 60_000 };
    await resetRateLimit(first, 'test:parallel');
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => hitRateLimit(i % 2 ? first : second, 'test:parallel', rule)),
    );
    expect(results.filter((r) => r.allowed)).toHaveLength(30);
    expect(results.map((r) => r.hits).sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    // A new window starts after the old one has passed.
    const later = await hitRateLimit(first, 'test:parallel', rule, Date.now() + 61_000);
    expect(later).toMatchObject({ allowed: true, hits: 1 });
  });
});

describe.skipIf(!databaseKinds.includes('postgres'))('readiness on PostgreSQL', () => {
  it('turns 503 when the database goes away, while liveness stays 200', async () => {
    const server = await startTestServer('postgres');
    try {
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      const name = new URL(server.database.url).pathname.slice(1);
      const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
      await admin.connect();
      await admin.query(`drop database ${name} with (force)`);
      await admin.end();
      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ status: 'unavailable', database: 'postgres' });
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await server.close({ keepDatabase: true });
    }
  });

  it('refuses to start when PostgreSQL cannot be reached, with a clear message', async () => {
    const run = spawnQuartet(['serve'], { env: { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', PORT: '0' } });
    expect(await run.exited).toBe(1);
    expect(run.output()).toMatch(/ECONNREFUSED|connect/);
  });
});

describe('SQLite checkpoints', () => {
  it('are made by a worker thread: the log reaches the file with no checkpoint on the main connection', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quartet-checkpoint-'));
    const file = join(dir, 'checkpoint.db');
    const db = await openDatabase(parseDatabaseUrl(`sqlite:${file}`));
    try {
      await migrate(db, serviceMigrations);
      const before = statSync(file).size;
      // About 2 MB in one commit: 500 pages, well under the main connection's autocheckpoint.
      const payload = 'x'.repeat(4000);
      await writeTransaction(db, async (trx) => {
        for (let i = 0; i < 500; i++) {
          await trx
            .insertInto('rate_limits')
            .values({ key: `checkpoint:${i}:${payload}`, hits: 1, window_start: i })
            .execute();
        }
      });
      const deadline = Date.now() + 10_000;
      while (statSync(file).size < before + 1_000_000 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(statSync(file).size).toBeGreaterThan(before + 1_000_000);
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
