// Forward-only migrations: the platform's own and those of the services it is given (src/services.ts
// lists them all), applied at start-up and by `quartet migrate`. Names start with a number that orders
// them across services (0xxx platform, 1xxx users and tasks, 2xxx proxy, 3xxx quotes); each is applied
// once, in name order, whatever was applied before.
import { type Kysely, sql } from 'kysely';
import { columnsFor, type Columns } from './columns.js';
import type { DatabaseConfig } from '../config.js';
import { openDatabase, type Database } from './index.js';
import { platformMigrations } from './platform-migrations.js';

/**
 * The schema a migration runs against: any, as Kysely advises for migrations, since each one meets the
 * tables as they were when it was written (not DB), and the next ones change them under it.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration's schema changes under it
export type AnySchema = any;

export interface Migration {
  name: string;
  up(db: Kysely<AnySchema>, columns: Columns): Promise<void>;
}

/**
 * Applies the pending ones of the platform's migrations and `serviceMigrations` in name order inside
 * one transaction that holds a lock every other process must wait for (BEGIN IMMEDIATE on SQLite, an
 * advisory lock on PostgreSQL), so processes starting together never apply one twice. Returns the
 * names applied.
 */
export async function migrate(database: Database, serviceMigrations: readonly Migration[]): Promise<string[]> {
  const allMigrations = [...platformMigrations, ...serviceMigrations];
  const names = new Set<string>();
  for (const migration of allMigrations) {
    if (names.has(migration.name)) throw new Error(`duplicate migration name ${migration.name}`);
    names.add(migration.name);
  }
  const columns = columnsFor(database.dialect);
  const pending = async (db: Kysely<AnySchema>) => {
    await db.schema
      .createTable('quartet_migrations')
      .ifNotExists()
      .addColumn('name', 'text', (col) => col.primaryKey())
      .addColumn('applied_at', columns.bigint, (col) => col.notNull())
      .execute();
    const done = new Set(
      (await db.selectFrom('quartet_migrations').select('name').execute()).map((row) => row.name as string),
    );
    return allMigrations.sort((a, b) => a.name.localeCompare(b.name)).filter((m) => !done.has(m.name));
  };
  const apply = async (db: Kysely<AnySchema>) => {
    const applied: string[] = [];
    for (const migration of await pending(db)) {
      await migration.up(db, columns);
      await db.insertInto('quartet_migrations').values({ name: migration.name, applied_at: Date.now() }).execute();
      applied.push(migration.name);
    }
    return applied;
  };

  if (database.dialect === 'postgres') {
    return database.kysely.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(7262001)`.execute(trx);
      return apply(trx);
    });
  }
  // better-sqlite3 runs on one connection; pin it and take the write lock up front.
  return database.kysely.connection().execute(async (conn) => {
    await beginImmediate(conn);
    try {
      const applied = await apply(conn);
      await sql`commit`.execute(conn);
      return applied;
    } catch (error) {
      await sql`rollback`.execute(conn);
      throw error;
    }
  });
}

const MIGRATION_LOCK_WAIT_MS = 120_000;

/** Takes SQLite's write lock, waiting longer than busy_timeout for another process's migrations. */
async function beginImmediate(conn: Kysely<AnySchema>): Promise<void> {
  const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS;
  for (;;) {
    try {
      await sql`begin immediate`.execute(conn);
      return;
    } catch (error) {
      const busy = (error as { code?: string }).code?.startsWith('SQLITE_BUSY');
      if (!busy || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** Opens the database, applies what is pending and closes it (`quartet migrate`; a WORKERS primary). */
export async function migrateDatabase(
  config: DatabaseConfig,
  serviceMigrations: readonly Migration[],
): Promise<string[]> {
  const db = await openDatabase(config);
  try {
    return await migrate(db, serviceMigrations);
  } finally {
    await db.close();
  }
}
