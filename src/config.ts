// The platform's configuration. Each service reads its own variables in its own config.ts, and
// src/services.ts puts the whole Config together: the platform imports no service.
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { ConfigError, type Env, bool, int, list, oneOf, str } from './env.js';

/** The names SERVICES may list; src/services.ts maps each one to its service. */
export const SERVICE_NAMES = ['proxy', 'tasks', 'quotes', 'docs'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

export type DatabaseConfig =
  { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string; poolSize: number; queryTimeoutMs: number };

export interface PlatformConfig {
  port: number;
  host: string;
  database: DatabaseConfig;
  services: ServiceName[];
  logLevel: string;
  /** Write each log line before going on (slower); otherwise lines are written in the background. */
  logSync: boolean;
  /** The searchable copy of the log (src/logs/log-store.ts); null: not kept (LOG_DIR=off). */
  logStore: { dir: string; maxFileBytes: number; maxTotalBytes: number; keepDays: number } | null;
  /** `'*'` allows every origin; otherwise the exact origins allowed. */
  corsOrigins: '*' | string[];
  bodyLimit: number;
  trustProxy: boolean;
  shutdownTimeoutMs: number;
  /** How long an idle keep-alive connection is kept open. */
  keepAliveTimeoutMs: number;
  /** Longest time for a request's headers to arrive. */
  headersTimeoutMs: number;
  /** Longest time for a whole request (headers and body) to arrive; 0: none. The answer is not bounded by it. */
  requestTimeoutMs: number;
  /** Processes serving the port (src/workers.ts); 1 serves from this process. */
  workers: number;
}

export function parseDatabaseUrl(value: string, poolSize = 10, queryTimeoutMs = 60_000): DatabaseConfig {
  if (/^postgres(ql)?:\/\//.test(value)) {
    if (!URL.canParse(value)) throw new ConfigError('DATABASE_URL', 'not a valid postgres:// URL');
    return { kind: 'postgres', url: value, poolSize, queryTimeoutMs };
  }
  const file = value.replace(/^sqlite:(\/\/)?/, '');
  if (!file) throw new ConfigError('DATABASE_URL', 'expected sqlite:<file> or postgres://…');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(file)) {
    throw new ConfigError(
      'DATABASE_URL',
      `unsupported database "${value.split(':')[0]}" (use sqlite:<file> or postgres://…)`,
    );
  }
  return { kind: 'sqlite', file };
}

/** The platform's variables; src/services.ts adds each service's (loadFullConfig). */
export function loadConfig(env: Env): PlatformConfig {
  const services = list(env, 'SERVICES', [...SERVICE_NAMES]);
  for (const name of services) {
    if (!(SERVICE_NAMES as readonly string[]).includes(name)) {
      throw new ConfigError('SERVICES', `unknown service "${name}" (known: ${SERVICE_NAMES.join(', ')})`);
    }
  }
  if (services.length === 0) throw new ConfigError('SERVICES', 'names no service');
  const cors = list(env, 'CORS_ORIGINS', ['*']);
  for (const origin of cors) {
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new ConfigError('CORS_ORIGINS', `"${origin}" is not an origin like https://example.com`);
    }
  }
  const headersTimeoutMs = int(env, 'HEADERS_TIMEOUT_MS', 30_000, 100, 3_600_000);
  const requestTimeoutMs = int(env, 'REQUEST_TIMEOUT_MS', 300_000, 0, 3_600_000);
  // Node refuses a headers timeout longer than the request's.
  if (requestTimeoutMs > 0 && headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('HEADERS_TIMEOUT_MS', `must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  }
  const database = parseDatabaseUrl(
    str(env, 'DATABASE_URL', 'sqlite:./data/quartet.db'),
    int(env, 'PG_POOL_SIZE', 10, 1, 1000),
    int(env, 'PG_QUERY_TIMEOUT_MS', 60_000, 1000, 3_600_000),
  );
  // The log's searchable copy lives beside the SQLite file by default (the data directory).
  const logDir = str(
    env,
    'LOG_DIR',
    database.kind === 'sqlite' && database.file !== ':memory:' ? join(dirname(database.file), 'logs') : './data/logs',
  );
  return {
    port: int(env, 'PORT', 3000, 0, 65535),
    host: str(env, 'HOST', '0.0.0.0'),
    database,
    services: [...new Set(services)] as ServiceName[],
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
    logSync: bool(env, 'LOG_SYNC', false),
    logStore:
      logDir === 'off'
        ? null
        : {
            dir: logDir,
            maxFileBytes: int(env, 'LOG_FILE_MAX_BYTES', 64 * 1024 * 1024, 4096, 2 ** 40),
            maxTotalBytes: int(env, 'LOG_MAX_BYTES', 1024 * 1024 * 1024, 4096, 2 ** 50),
            keepDays: int(env, 'LOG_KEEP_DAYS', 14, 1, 3650),
          },
    corsOrigins: cors.includes('*') ? '*' : cors,
    bodyLimit: int(env, 'BODY_LIMIT', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    trustProxy: bool(env, 'TRUST_PROXY', false),
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    keepAliveTimeoutMs: int(env, 'KEEP_ALIVE_TIMEOUT_MS', 72_000, 1000, 3_600_000),
    headersTimeoutMs,
    requestTimeoutMs,
    workers: env.WORKERS?.trim() === 'auto' ? availableParallelism() : int(env, 'WORKERS', 1, 1, 256),
  };
}
