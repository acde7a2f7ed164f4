// Prometheus metrics through prom-client: HTTP traffic (registerMetrics), the process's own (CPU,
// memory, event loop: prom-client's default metrics) and the services' (`metrics.counter`).
// With WORKERS > 1 each worker counts its own requests; `/metrics` on any of them asks the primary,
// which gathers every worker's and answers with their sum (prom-client's AggregatorRegistry).
import cluster from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { HttpError } from './errors.js';

export type { Counter };

/** One process's metrics; services create theirs through it. */
export class MetricsRegistry {
  readonly registry = new Registry();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** The counter `name`, created on first use; `labelNames` lists every label its `inc` may pass. */
  counter(name: string, help: string, labelNames: string[] = []): Counter {
    const existing = this.registry.getSingleMetric(name);
    if (existing) return existing as Counter;
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** The gauge `name`, set from `read()` at each scrape; the first registration of a name wins. */
  gauge(name: string, help: string, read: () => number): Gauge {
    const existing = this.registry.getSingleMetric(name);
    if (existing) return existing as Gauge;
    return new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }
}

export function registerMetrics(app: FastifyInstance, metrics: MetricsRegistry) {
  const registers = [metrics.registry];
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route and status.',
    labelNames: ['method', 'route', 'status'],
    registers,
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer HTTP requests.',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers,
  });
  // Each label set's series, found by one string rather than by prom-client hashing a labels
  // object twice per request. The route pattern, not the URL, keeps label cardinality bounded
  // (methods are the HTTP parser's, statuses three digits), and this map with it.
  const series = new Map<string, { count: Counter.Internal; time: Histogram.Internal<string> }>();
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const { method } = request;
    const { statusCode } = reply;
    const key = `${statusCode} ${method} ${route}`;
    let found = series.get(key);
    if (!found) {
      found = { count: requests.labels(method, route, String(statusCode)), time: duration.labels(method, route) };
      series.set(key, found);
    }
    found.count.inc();
    found.time.observe(reply.elapsedTime / 1000);
    done();
  });

  const inCluster = cluster.isWorker && typeof process.send === 'function';
  if (inCluster) answerPrimaryForMetrics(metrics.registry);
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return inCluster ? askPrimaryForMetrics() : metrics.registry.metrics();
  });
}

// The IPC between a worker's /metrics and the primary (src/workers.ts).
const METRICS_REQUEST = 'quartet:metrics-request';
const METRICS_ANSWER = 'quartet:metrics-answer';
const METRICS_TIMEOUT_MS = 10_000;

interface MetricsAnswer {
  type: typeof METRICS_ANSWER;
  id: number;
  text?: string;
  error?: string;
}

function isMessage<T extends { type: string }>(message: unknown, type: T['type']): message is T {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type;
}

/** In a worker: lets the primary's AggregatorRegistry collect this process's registry. */
function answerPrimaryForMetrics(registry: Registry) {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs prom-client's listener for the primary's requests.
  new AggregatorRegistry(); // eslint-disable-line no-new
}

let nextRequestId = 0;

/** In a worker: the whole cluster's metrics, as the primary sums them. */
function askPrimaryForMetrics(): Promise<string> {
  const id = nextRequestId++;
  return new Promise((resolve, reject) => {
    const onMessage = (message: unknown) => {
      if (!isMessage<MetricsAnswer>(message, METRICS_ANSWER) || message.id !== id) return;
      settle();
      if (message.text !== undefined) resolve(message.text);
      else reject(new HttpError(503, `Metrics unavailable: ${message.error ?? 'no answer'}`));
    };
    const timer = setTimeout(() => {
      settle();
      reject(new HttpError(503, 'Metrics unavailable: the primary process did not answer'));
    }, METRICS_TIMEOUT_MS);
    const settle = () => {
      clearTimeout(timer);
      process.off('message', onMessage);
    };
    process.on('message', onMessage);
    process.send!({ type: METRICS_REQUEST, id });
  });
}

/** In the primary: answers each worker's request with every worker's metrics, summed. */
export function serveClusterMetrics() {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: unknown) => {
    if (!isMessage<{ type: string; id: number }>(message, METRICS_REQUEST)) return;
    const answer = (fields: Partial<MetricsAnswer>) => {
      if (worker.isConnected()) worker.send({ type: METRICS_ANSWER, id: message.id, ...fields });
    };
    aggregator.clusterMetrics().then(
      (text) => answer({ text }),
      (error: unknown) => answer({ error: error instanceof Error ? error.message : String(error) }),
    );
  });
}
