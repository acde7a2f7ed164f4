// The databases every storage test runs on: a fresh SQLite file, and a fresh PostgreSQL
// database when a server is reachable. With QUARTET_REQUIRE_PG=1 (set by .ci/run) an
// unreachable PostgreSQL is an error instead of a skip; QUARTET_TEST_DATABASES=sqlite (the fast
// loop, test/README.md) runs on SQLite only without trying PostgreSQL.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export type DatabaseKind = 'sqlite' | 'postgres';

export interface TestDatabase {
  kind: DatabaseKind;
  /** A DATABASE_URL for quartet. */
  url: string;
  drop(): Promise<void>;
}

export const PG_ADMIN_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const sqliteOnly = process.env.QUARTET_TEST_DATABASES === 'sqlite';

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

export const postgresAvailable = !sqliteOnly && (await postgresReachable());

if (!postgresAvailable && !sqliteOnly) {
  if (process.env.QUARTET_REQUIRE_PG === '1') {
    throw new Error(
      `PostgreSQL is required (QUARTET_REQUIRE_PG=1) but ${PG_ADMIN_URL.replace(/\/\/[^@]*@/, '//')} is unreachable`,
    );
  }
  console.warn(`PostgreSQL unreachable at ${PG_ADMIN_URL}: PostgreSQL tests are SKIPPED`);
}

/** The kinds to run on; use with describe.each. PostgreSQL only when reachable. */
export const databaseKinds: DatabaseKind[] = postgresAvailable ? ['sqlite', 'postgres'] : ['sqlite'];

export async function createTestDatabase(kind: DatabaseKind): Promise<TestDatabase> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'quartet-test-'));
    return {
      kind,
      url: `sqlite:${join(dir, 'test.db')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `quartet_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    kind,
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}
