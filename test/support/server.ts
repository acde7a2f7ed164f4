// Starts the real quartet server on a loopback port for black-box HTTP tests.
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import type { Database } from '../../src/db/index.js';
import { buildServer } from '../../src/server.js';
import { createTestDatabase, type DatabaseKind, type TestDatabase } from './databases.js';

export interface TestServer {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:41234 */
  url: string;
  app: FastifyInstance;
  db: Database;
  config: Config;
  database: TestDatabase;
  /** Closes the server; drops the database unless `keepDatabase`. */
  close(options?: { keepDatabase?: boolean }): Promise<void>;
}

export interface TestServerOptions {
  /** Environment variables on top of the test defaults. */
  env?: Record<string, string>;
  /** Reuse an existing database (e.g. a second process on the same PostgreSQL). */
  database?: TestDatabase;
  logger?: unknown;
}

export async function startTestServer(kind: DatabaseKind, options: TestServerOptions = {}): Promise<TestServer> {
  const database = options.database ?? (await createTestDatabase(kind));
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    DATABASE_URL: database.url,
    ...options.env,
  });
  const { app, db } = await buildServer(config, { logger: options.logger });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('server has no TCP address');
  return {
    url: `http://127.0.0.1:${address.port}`,
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
