// Builds the one Fastify app that serves every mounted service, and runs it with a graceful
// shutdown (stop accepting, finish in-flight requests, close the database).
import { randomUUID } from 'node:crypto';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { ServiceName } from './config.js';
import { openDatabase, type Database } from './db/index.js';
import { migrate } from './db/migrate.js';
import { registerCors } from './http/cors.js';
import { readEarlyAnswers } from './http/edge.js';
import {
  answerConnect,
  clientErrorHandler,
  errorHandlerFor,
  frameworkErrorHandler,
  HttpError,
  sendError,
} from './http/errors.js';
import { installJsonParser } from './http/json-depth.js';
import { accessLog, exitAfterLog, loggerOptions, stdoutDestination } from './http/logging.js';
import { keptDestination, LogStore } from './logs/log-store.js';
import { MetricsRegistry, registerMetrics } from './http/metrics.js';
import { RequestLogger } from './http/request-logger.js';
import { OpenApiCollector } from './http/openapi.js';
import { validatorCompiler } from './http/validation.js';
import {
  errorStyleFor,
  LOCAL_PREFIXES,
  serviceLoaders,
  serviceMigrations,
  type Config,
  type ServiceContext,
  type ServiceDefinition,
} from './services.js';
import { createIdentity } from './users/identity.js';

export interface BuiltServer {
  app: FastifyInstance;
  db: Database;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;
/** The methods routes are served for; any other one is answered 405 before anything else runs. */
const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const ROUTED_METHODS = new Set<string>(ALL_METHODS);
const ALLOW = ALL_METHODS.join(', ');

/** How often Node looks for requests past their timeouts (its default, 30 s, makes a 30 s timeout up to 60). */
const TIMEOUT_CHECK_INTERVAL_MS = 1000;

export interface BuildOptions {
  /** Overrides the logger (tests pass a stream to read what is logged). */
  logger?: unknown;
}

export async function buildServer(config: Config, options: BuildOptions = {}): Promise<BuiltServer> {
  const db = await openDatabase(config.database);
  try {
    await migrate(db, serviceMigrations);
  } catch (error) {
    await db.close();
    throw error;
  }

  // The log's searchable copy (src/logs/log-store.ts), of the lines written to standard output.
  const logStore = !options.logger && config.logStore ? new LogStore(config.logStore) : null;
  const stdout = stdoutDestination(config.logSync);
  const app = Fastify({
    logger: (options.logger ?? {
      ...(loggerOptions(config.logLevel) as object),
      stream: logStore ? keptDestination(stdout, logStore) : stdout,
    }) as FastifyServerOptions['logger'],
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    forceCloseConnections: 'idle',
    // Fastify's 10 s for a plugin to start was too short on a busy machine (load 20 on 2 cores):
    // "Plugin did not start in time" ended `quartet serve`. A start that hangs still fails.
    pluginTimeout: 120_000,
    // Timeouts of receiving a request (README.md, "Configuration"); none bounds the answer, as the
    // proxy streams answers for minutes (hence no connectionTimeout: it would cut a silent stream).
    keepAliveTimeout: config.keepAliveTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    http: { headersTimeout: config.headersTimeoutMs, connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS },
    // The 503s of the drain, bad URLs and malformed HTTP are answered in the area's shape
    // (the onRequest hook below, errors.ts) rather than in Fastify's.
    return503OnClosing: false,
    frameworkErrors: frameworkErrorHandler(errorStyleFor),
    clientErrorHandler: clientErrorHandler(errorStyleFor),
    // One access-log line per request (accessLog below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // A request's own logger is made when it logs something (request-logger.ts).
    childLoggerFactory: options.logger ? undefined : RequestLogger.factory,
    requestIdHeader: false,
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    // `//1/projects` is /1/projects: clients whose base address ends in "/" (onesky-utils) send such paths.
    routerOptions: { maxParamLength: 500, ignoreDuplicateSlashes: true },
  });
  app.setValidatorCompiler(validatorCompiler);
  installJsonParser(app);
  app.setErrorHandler(errorHandlerFor(errorStyleFor));
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  // Callback-style hooks: they run on every request, and an async one costs a promise each time.
  // An answer sent here ends the request without done().
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (closing) {
      // Requests still arriving on open connections during the drain (Fastify's return503OnClosing).
      reply.header('connection', 'close');
      const error = new HttpError(503, 'The server is shutting down; try again');
      return void sendError(reply, errorStyleFor(request.url), error);
    }
    if (!ROUTED_METHODS.has(request.method)) {
      const message = `Method ${request.method} is not allowed; this server serves ${ALLOW}`;
      const error = new HttpError(405, message, { headers: { allow: ALLOW } });
      return void sendError(reply, errorStyleFor(request.url), error);
    }
    done();
  });
  const logRequest = accessLog(app.log, !options.logger);
  app.addHook('onResponse', (request, reply, done) => {
    logRequest(request, reply);
    done();
  });
  app.addHook('onClose', async () => {
    await db.close();
    await logStore?.close();
  });

  app.server.on('connect', answerConnect(ALLOW, errorStyleFor));
  readEarlyAnswers(app.server);
  registerCors(app, config.corsOrigins);
  const metrics = new MetricsRegistry();
  registerMetrics(app, metrics);

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    try {
      await withTimeout(db.ping(), 2000);
      return { status: 'ready', database: db.dialect };
    } catch (error) {
      request.log.warn({ err: error }, 'readiness check failed');
      return reply.code(503).send({ status: 'unavailable', database: db.dialect, reason: 'database unreachable' });
    }
  });

  const definitions: ServiceDefinition[] = [];
  for (const name of config.services) definitions.push(await serviceLoaders[name]());
  const descriptions = definitions
    .filter((d) => d.openapi)
    .map((d) => ({ name: d.name, title: d.openapi!.title, url: `/openapi/${d.name}.json` }));

  const identity = createIdentity(db, config);
  const documents = new Map<ServiceName, OpenApiCollector>();
  for (const definition of definitions) {
    const collector = definition.openapi
      ? new OpenApiCollector(definition.openapi, { securitySchemes: definition.openapi.securitySchemes })
      : null;
    if (collector) documents.set(definition.name, collector);
    const context: ServiceContext = { config, db, identity, metrics, openapi: collector, descriptions, logs: logStore };
    await app.register(async (scope) => {
      collector?.attach(scope);
      await definition.register(scope, context);
    });
    if (definition.close) app.addHook('preClose', definition.close);
  }

  app.get('/openapi/', { schema: { hide: true } }, async () => ({ descriptions }));
  for (const [name, collector] of documents) {
    let cached: unknown;
    app.get(`/openapi/${name}.json`, { schema: { hide: true } }, async () => (cached ??= collector.document()));
  }

  // One 404 for every path without a route, in its area's shape; the local prefixes claim every
  // method so that nothing under them reaches the proxy's catch-all.
  const notFound = (request: FastifyRequest, reply: FastifyReply) => {
    const error = new HttpError(404, `No route ${request.method} ${request.url.split('?')[0]}`);
    return sendError(reply, errorStyleFor(request.url), error);
  };
  for (const prefix of LOCAL_PREFIXES) {
    for (const url of [prefix, `${prefix}/*`]) {
      const free = ALL_METHODS.filter((method) => !app.hasRoute({ url, method }));
      if (free.length) app.route({ method: free, url, handler: notFound, schema: { hide: true } });
    }
  }
  if (!config.services.includes('proxy')) {
    app.get('/', { schema: { hide: true } }, async () => ({
      name: 'quartet',
      services: config.services,
      descriptions,
      ...(config.services.includes('docs') ? { docs: '/docs/' } : {}),
    }));
  }
  app.setNotFoundHandler(notFound);

  await app.ready();
  return { app, db };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** Starts listening and installs SIGTERM/SIGINT handlers that drain and close. */
export async function startServer(config: Config): Promise<BuiltServer & { address: string }> {
  const built = await buildServer(config);
  const address = await built.app.listen({ port: config.port, host: config.host });
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    built.app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      built.app.log.error('shutdown timed out; exiting');
      exitAfterLog(built.app.log, 1);
    }, config.shutdownTimeoutMs);
    force.unref();
    built.app.close().then(
      () => {
        built.app.log.info('shut down cleanly');
        exitAfterLog(built.app.log, 0);
      },
      (error) => {
        built.app.log.error({ err: error }, 'error while shutting down');
        exitAfterLog(built.app.log, 1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  return { ...built, address };
}
