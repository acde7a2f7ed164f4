// The services quartet can mount, and the one place that names them all: the platform (config.ts,
// env.ts, http/, db/) imports no service; it is handed here what it needs of each one: its
// configuration, its migrations and tables, and the error shape of its paths. A service's routes
// and parts are loaded only when SERVICES names it.
import './http/openapi.js';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type PlatformConfig, type ServiceName } from './config.js';
import type { Database } from './db/index.js';
import type { Migration } from './db/migrate.js';
import type { Env } from './env.js';
import type { Identity } from './http/auth.js';
import { errorStylesByPrefix, oneSkyStyle, openAiStyle, problemStyle, type ErrorStyle } from './http/errors.js';
import type { MetricsRegistry } from './http/metrics.js';
import type { LogStore } from './logs/log-store.js';
import type { OpenApiCollector } from './http/openapi.js';
import { loadProxyConfig, type ProxyConfig } from './proxy/common/config.js';
import { proxyMigrations } from './proxy/common/migrations.js';
import type { ProxyTables } from './proxy/common/tables.js';
import { loadQuotesConfig, type QuotesConfig } from './quotes/config.js';
import { quotesMigrations } from './quotes/migrations.js';
import type { QuotesTables } from './quotes/tables.js';
import { loadUsersConfig, type UsersConfig } from './users/config.js';
import { usersMigrations } from './users/migrations.js';
import type { UsersTables } from './users/tables.js';

/** The whole configuration: the platform's variables and each service's (proxy, users and tasks, quotes). */
export interface Config extends PlatformConfig {
  proxy: ProxyConfig;
  users: UsersConfig;
  quotes: QuotesConfig;
}

/**
 * Reads the platform's variables, then every service's, mounted or not: a bad value stops any
 * start with one line naming it, whatever SERVICES says.
 */
export function loadFullConfig(env: Env): Config {
  const platform = loadConfig(env);
  return { ...platform, proxy: loadProxyConfig(env), users: loadUsersConfig(env), quotes: loadQuotesConfig(env) };
}

/** Every service's migrations, applied whatever SERVICES mounts (the platform adds its own). */
export const serviceMigrations: readonly Migration[] = [...usersMigrations, ...proxyMigrations, ...quotesMigrations];

// Every service's tables join the platform's in the database's type (src/db/schema.ts).
declare module './db/schema.js' {
  interface DB extends ProxyTables, UsersTables, QuotesTables {}
}

export interface ServiceContext {
  config: Config;
  db: Database;
  identity: Identity;
  metrics: MetricsRegistry;
  /** Collector of this service's OpenAPI document; null for services without one (docs). */
  openapi: OpenApiCollector | null;
  /** The descriptions published by the mounted services, for the viewer's selector. */
  descriptions: { name: ServiceName; title: string; url: string }[];
  /** The searchable copy of the log; null when not kept (LOG_DIR=off, or a logger given by a test). */
  logs: LogStore | null;
}

export interface ServiceDefinition {
  name: ServiceName;
  /** OpenAPI info of the service's description; absent for services with no API (docs). */
  openapi?: { title: string; version: string; description?: string; securitySchemes?: Record<string, unknown> };
  /** Registers the service's routes inside its own encapsulated scope. */
  register(app: FastifyInstance, context: ServiceContext): Promise<void>;
  /** Work to finish before the database closes at shutdown (timers, background jobs). */
  close?(): Promise<void>;
}

export const serviceLoaders: Record<ServiceName, () => Promise<ServiceDefinition>> = {
  tasks: async () => (await import('./users/service.js')).service,
  quotes: async () => (await import('./quotes/service.js')).service,
  docs: async () => (await import('./docs/service.js')).service,
  proxy: async () => (await import('./proxy/service.js')).service,
};

/**
 * The local prefixes (the paths of the services other than the proxy, and the OpenAPI
 * descriptions) with their error shape, mounted or not: they never reach the proxy's upstream.
 */
const LOCAL_PREFIX_STYLES = [
  ['/api', problemStyle],
  ['/1', oneSkyStyle],
  ['/docs', problemStyle],
  ['/openapi', problemStyle],
] as const satisfies readonly (readonly [string, ErrorStyle])[];

/** Path prefixes that belong to local services and never reach the proxy's upstream. */
export const LOCAL_PREFIXES = LOCAL_PREFIX_STYLES.map(([prefix]) => prefix);
export type LocalPrefix = (typeof LOCAL_PREFIXES)[number];

/**
 * The error shape of an answer to a request target: its local prefix's, else the proxy node's –
 * the proxy's paths, /v1/…, `/` and the platform routes (/healthz, /readyz, /metrics) share its namespace.
 */
export const errorStyleFor = errorStylesByPrefix(LOCAL_PREFIX_STYLES, openAiStyle);

/** Whether `path` is one of `prefixes` or lies below one. */
export function isUnderPrefix(path: string, prefixes: readonly string[]): boolean {
  return prefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}
