// Builds the real quartet server for black-box tests: on a loopback port (startTestServer), or in
// process for `app.inject` (buildTestApp), which needs no port, for checks of a status and a body shape.
import type { FastifyInstance } from 'fastify';
import { loadFullConfig, type Config } from '../../src/services.js';
import type { Database } from '../../src/db/index.js';
import { buildServer } from '../../src/server.js';
import { createTestDatabase, type DatabaseKind, type TestDatabase } from './databases.js';

export interface TestApp {
  app: FastifyInstance;
  db: Database;
  config: Config;
  database: TestDatabase;
  /** Closes the server; drops the database unless `keepDatabase`. */
  close(options?: { keepDatabase?: boolean }): Promise<void>;
}

export interface TestServer extends TestApp {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:41234 */
  url: string;
}

export interface TestServerOptions {
  /** Environment variables on top of the test defaults. */
  env?: Record<string, string>;
  /** Reuse an existing database (e.g. a second process on the same PostgreSQL). */
  database?: TestDatabase;
  logger?: unknown;
}

/** The server, ready for `app.inject`, not listening. */
export async function buildTestApp(kind: DatabaseKind, options: TestServerOptions = {}): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase(kind));
  const config = loadFullConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    DATABASE_URL: database.url,
    ...options.env,
  });
  const { app, db } = await buildServer(config, { logger: options.logger });
  return {
    app,
    db,
    config,
    database,
    async close({ keepDatabase = false } = {}) {
      await app.close();
      if (!keepDatabase && !options.database) await database.drop();
    },
  };
}

export async function startTestServer(kind: DatabaseKind, options: TestServerOptions = {}): Promise<TestServer> {
  const built = await buildTestApp(kind, options);
  await built.app.listen({ port: 0, host: '127.0.0.1' });
  const address = built.app.server.address();
  if (!address || typeof address === 'string') throw new Error('server has no TCP address');
  return { ...built, url: `http://127.0.0.1:${address.port}` };
}
