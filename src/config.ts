// The whole configuration: the platform's variables here, each service's in its own config.ts.
import { availableParallelism } from 'node:os';
import { ConfigError, type Env, bool, int, list, oneOf, str } from './env.js';
import { loadProxyConfig, type ProxyConfig } from './proxy/common/config.js';
import { loadUsersConfig, type UsersConfig } from './users/config.js';
import { loadQuotesConfig, type QuotesConfig } from './quotes/config.js';

export const SERVICE_NAMES = ['proxy', 'tasks', 'quotes', 'docs'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

export type DatabaseConfig =
  { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string; poolSize: number; queryTimeoutMs: number };

export interface Config {
  port: number;
  host: string;
  database: DatabaseConfig;
  services: ServiceName[];
  logLevel: string;
  /** Write each log line before going on (slower); otherwise lines are written in the background. */
  logSync: boolean;
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
  proxy: ProxyConfig;
  users: UsersConfig;
  quotes: QuotesConfig;
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

export function loadConfig(env: Env): Config {
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
  return {
    port: int(env, 'PORT', 3000, 0, 65535),
    host: str(env, 'HOST', '0.0.0.0'),
    database: parseDatabaseUrl(
      str(env, 'DATABASE_URL', 'sqlite:./data/quartet.db'),
      int(env, 'PG_POOL_SIZE', 10, 1, 1000),
      int(env, 'PG_QUERY_TIMEOUT_MS', 60_000, 1000, 3_600_000),
    ),
    services: [...new Set(services)] as ServiceName[],
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
    logSync: bool(env, 'LOG_SYNC', false),
    corsOrigins: cors.includes('*') ? '*' : cors,
    bodyLimit: int(env, 'BODY_LIMIT', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    trustProxy: bool(env, 'TRUST_PROXY', false),
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    keepAliveTimeoutMs: int(env, 'KEEP_ALIVE_TIMEOUT_MS', 72_000, 1000, 3_600_000),
    headersTimeoutMs,
    requestTimeoutMs,
    workers: env.WORKERS?.trim() === 'auto' ? availableParallelism() : int(env, 'WORKERS', 1, 1, 256),
    proxy: loadProxyConfig(env),
    users: loadUsersConfig(env),
    quotes: loadQuotesConfig(env),
  };
}
