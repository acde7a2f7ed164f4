// The services quartet can mount. Each is loaded only when SERVICES names it.
import './http/openapi.js';
import type { FastifyInstance } from 'fastify';
import type { Config, ServiceName } from './config.js';
import type { Database } from './db/index.js';
import type { Identity } from './http/auth.js';
import type { MetricsRegistry } from './http/metrics.js';
import type { OpenApiCollector } from './http/openapi.js';

export interface ServiceContext {
  config: Config;
  db: Database;
  identity: Identity;
  metrics: MetricsRegistry;
  /** Collector of this service's OpenAPI document; null for services without one (docs). */
  openapi: OpenApiCollector | null;
  /** The descriptions published by the mounted services, for the viewer's selector. */
  descriptions: { name: ServiceName; title: string; url: string }[];
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

/** Path prefixes that belong to local services and never reach the proxy's upstream. */
export const LOCAL_PREFIXES = ['/api', '/1', '/docs', '/openapi'] as const;
export type LocalPrefix = (typeof LOCAL_PREFIXES)[number];

/** Whether `path` is one of `prefixes` or lies below one. */
export function isUnderPrefix(path: string, prefixes: readonly string[]): boolean {
  return prefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}
