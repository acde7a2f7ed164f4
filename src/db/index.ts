// One storage layer for both databases: Kysely over better-sqlite3 (embedded, WAL) or pg.
// Queries and migrations are written once; the few dialect differences live in columns.ts.
import { mkdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { dirname, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../config.js';
import { acceptCopyInput } from './copy.js';
import { DatabaseUnavailableError, isConnectionFailure } from './errors.js';
import { acceptNamedStatements } from './named.js';
import { FALLBACK_AUTOCHECKPOINT_PAGES, startCheckpointer } from './checkpointer.js';
import type { DB } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

/** What a store's statements run on: the database itself or a transaction of it. */
export type Executor = Kysely<DB> | Transaction<DB>;

export interface Database {
  kysely: Kysely<DB>;
  dialect: Dialect;
  /** SQLite's file (null: in memory, or PostgreSQL): what a worker thread opens to share the database. */
  file: string | null;
  /** Throws when the database cannot answer a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Longest wait for a new PostgreSQL connection before a request is answered 503. */
const PG_CONNECT_TIMEOUT_MS = 5000;

/**
 * A checked-out client has no 'error' listener of the pool's: the server ending its connection
 * between two statements of a transaction (a restart, pg_terminate_backend) emitted 'error' with
 * nobody listening, which ended the process. The statement that next uses the client fails, and the
 * pool drops the client when it comes back; connection failures of statements and of connecting
 * are thrown as DatabaseUnavailableError, which every service answers 503.
 */
function reportConnectionFailures(client: pg.PoolClient): void {
  client.on('error', () => {});
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((...args: unknown[]) => {
    const result = query(...args);
    return result instanceof Promise ? result.catch(rethrowAsUnavailable) : result;
  }) as typeof client.query;
}

function rethrowAsUnavailable(error: unknown): never {
  throw isConnectionFailure(error) ? new DatabaseUnavailableError(error) : error;
}

/** The pool as Kysely uses it, its connection failures thrown as DatabaseUnavailableError. */
function poolReportingFailures(pool: pg.Pool) {
  return {
    connect: () => pool.connect().catch(rethrowAsUnavailable),
    end: () => pool.end(),
  };
}

/** SQLite's busy_timeout for single statements: its busy handler waits in the calling thread. */
const SQLITE_BUSY_TIMEOUT_MS = 5000;

// int8 (bigint) arrives from pg as a string; every bigint we store (msat, ms timestamps, ids)
// fits in a double, so parse it, and refuse silently-rounded values.
pg.types.setTypeParser(20, (value: string) => {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error(`bigint ${value} exceeds the safe integer range`);
  return n;
});

/**
 * `checkpoints: false` for a second connection in a worker thread (src/proxy/usage/rollup-thread.ts):
 * the process's main connection has the checkpointer.
 */
export async function openDatabase(config: DatabaseConfig, options: { checkpoints?: boolean } = {}): Promise<Database> {
  if (config.kind === 'postgres') {
    const pool = new pg.Pool({
      connectionString: config.url,
      max: config.poolSize,
      connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS,
      // A server gone without closing the connection (a network cut) is noticed by TCP keep-alive,
      // and a statement that never answers fails after query_timeout instead of holding its caller.
      keepAlive: true,
      query_timeout: config.queryTimeoutMs,
    });
    // An idle client losing its server must not crash the process; the next query reports it.
    pool.on('error', () => {});
    // Bulk imports stream their rows with COPY through the same connections (./copy.ts).
    pool.on('connect', acceptCopyInput);
    // Hot statements prepared once per connection (./named.ts).
    pool.on('connect', acceptNamedStatements);
    pool.on('connect', reportConnectionFailures);
    const kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool: poolReportingFailures(pool) }) });
    const database: Database = {
      kysely,
      dialect: 'postgres',
      file: null,
      ping: async () => {
        await sql`select 1`.execute(kysely);
      },
      close: () => kysely.destroy(),
    };
    await database.ping();
    return database;
  }
  const file = config.file === ':memory:' ? ':memory:' : resolve(config.file);
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const native = new BetterSqlite3(file);
  native.pragma('journal_mode = WAL');
  native.pragma('synchronous = NORMAL');
  native.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  native.pragma('foreign_keys = ON');
  // Checkpoints in a worker thread (./checkpointer.ts), not on the event loop.
  const checkpointer = file === ':memory:' || options.checkpoints === false ? null : startCheckpointer(file);
  if (checkpointer) native.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  const kysely = new Kysely<DB>({ dialect: new SqliteDialect({ database: withStatementCache(native) }) });
  return {
    kysely,
    dialect: 'sqlite',
    file: file === ':memory:' ? null : file,
    ping: async () => {
      if (!native.open) throw new Error('database is closed');
      await sql`select 1`.execute(kysely);
    },
    close: async () => {
      await checkpointer?.stop();
      await kysely.destroy();
    },
  };
}

/**
 * Runs `work` in a transaction that holds SQLite's write lock from its start (`begin immediate`):
 * a deferred transaction that reads and then writes fails at once, without waiting, when another
 * process wrote in between. On PostgreSQL an ordinary transaction (the statements lock rows).
 * SQLite's busy handler sleeps in the calling thread, the event loop here: while another process
 * (WORKERS > 1, a second node) holds the write lock, a transaction waits for it between tries
 * instead, the event loop serving other requests meanwhile (whose steps join the next batch).
 */
export async function writeTransaction<T>(db: Database, work: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
  if (db.dialect === 'postgres') return inTransaction(db, work);
  const deadline = Date.now() + SQLITE_BUSY_TIMEOUT_MS;
  for (let pause = 1; ; pause = Math.min(pause * 2, 50)) {
    try {
      return await inTransaction(db, work);
    } catch (error) {
      if (!(error instanceof WriteLockBusy)) throw error;
      if (Date.now() + pause > deadline) throw error.cause;
      await sleep(pause);
    }
  }
}

/** `begin immediate` found another connection writing (SQLite). */
class WriteLockBusy extends Error {}

async function inTransaction<T>(db: Database, work: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
  return db.kysely.connection().execute(async (connection) => {
    if (db.dialect === 'sqlite') await beginImmediateWithoutWaiting(connection);
    else await connection.executeQuery(CompiledQuery.raw('begin'));
    try {
      const result = await work(connection);
      await connection.executeQuery(CompiledQuery.raw('commit'));
      return result;
    } catch (error) {
      await connection.executeQuery(CompiledQuery.raw('rollback')).catch(() => {});
      throw error;
    }
  });
}

const NO_WAIT = CompiledQuery.raw('pragma busy_timeout = 0');
const WAIT = CompiledQuery.raw(`pragma busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);

/** `begin immediate` without waiting in SQLite's busy handler: WriteLockBusy instead. */
async function beginImmediateWithoutWaiting(connection: Kysely<DB>): Promise<void> {
  await connection.executeQuery(NO_WAIT);
  try {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  } catch (error) {
    if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY')) throw new WriteLockBusy('busy', { cause: error });
    throw error;
  } finally {
    await connection.executeQuery(WAIT);
  }
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query anew; better-sqlite3 statements can be reused, and parsing the
 * same SQL again was a large part of a short request's time. Keep the most recent ones.
 */
function withStatementCache(native: BetterSqlite3.Database) {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => native.close(),
    prepare(sql: string) {
      const cached = cache.get(sql);
      // A statement still iterating (a streamed query) cannot run again yet: prepare a fresh one.
      if (cached && !cached.busy) {
        cache.delete(sql);
        cache.set(sql, cached);
        return cached;
      }
      const statement = native.prepare(sql);
      if (!cached) {
        cache.set(sql, statement);
        if (cache.size > STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      }
      return statement;
    },
  };
}
