// PostgreSQL going away as a server restart, a failover or a pooler does it: the database's
// backends terminated and new connections refused (ALLOW_CONNECTIONS false) until it is back.
import pg from 'pg';
import { PG_ADMIN_URL, type TestDatabase } from './databases.js';

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `sql` as the server's superuser, outside the database under test; its rows. */
export async function admin(sql: string, values: unknown[] = []): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows;
  } finally {
    await client.end();
  }
}

export const databaseName = (database: TestDatabase) => new URL(database.url).pathname.slice(1);

/** Cuts every connection to the database, as a server restart does. */
export const terminateBackends = (name: string) =>
  admin('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [
    name,
  ]);

/** The database refuses new connections and loses the ones it had. */
export async function takeDown(database: TestDatabase): Promise<void> {
  await admin(`alter database ${databaseName(database)} allow_connections false`);
  await terminateBackends(databaseName(database));
}

/** The database accepts connections again. */
export async function bringBack(database: TestDatabase): Promise<void> {
  await admin(`alter database ${databaseName(database)} allow_connections true`);
}

/** Polls `probe` until it holds; the time it took, in ms. */
export async function timeUntil(what: string, probe: () => Promise<boolean>, withinMs = 30_000): Promise<number> {
  const start = Date.now();
  while (!(await probe())) {
    if (Date.now() - start > withinMs) throw new Error(`${what}: not within ${withinMs} ms`);
    await pause(50);
  }
  return Date.now() - start;
}

/** Whether a backend of the database is inside a transaction that wrote, on a statement matching `like`. */
export const writing = async (database: TestDatabase, like: string) =>
  (
    await admin(
      `select 1 from pg_stat_activity
       where datname = $1 and backend_xid is not null and state <> 'idle' and query ilike $2`,
      [databaseName(database), like],
    )
  ).length > 0;
