// Forward-only migrations of every service, applied at start-up and by `quartet migrate`.
// Names start with a number that orders them across services (0xxx platform, 1xxx users and
// tasks, 2xxx proxy, 3xxx quotes); unordered application is allowed so that a migration added
// later to one service still runs on a database that has newer ones of another.
import { type Kysely, type Migration as KyselyMigration, Migrator } from 'kysely';
import { columnsFor, type Columns } from './columns.js';
import type { Database } from './index.js';
import { platformMigrations } from './platform-migrations.js';
import { usersMigrations } from '../users/migrations.js';
import { proxyMigrations } from '../proxy/migrations.js';
import { quotesMigrations } from '../quotes/migrations.js';

export interface Migration {
  name: string;
  up(db: Kysely<any>, columns: Columns): Promise<void>;
}

export const allMigrations: Migration[] = [...platformMigrations, ...usersMigrations, ...proxyMigrations, ...quotesMigrations];

export async function migrate(database: Database): Promise<string[]> {
  const columns = columnsFor(database.dialect);
  const names = new Set<string>();
  const record: Record<string, KyselyMigration> = {};
  for (const migration of allMigrations) {
    if (names.has(migration.name)) throw new Error(`duplicate migration name ${migration.name}`);
    names.add(migration.name);
    record[migration.name] = { up: (db) => migration.up(db, columns) };
  }
  const migrator = new Migrator({
    db: database.kysely,
    provider: { getMigrations: async () => record },
    allowUnorderedMigrations: true,
    migrationTableName: 'quartet_migrations',
    migrationLockTableName: 'quartet_migrations_lock',
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
