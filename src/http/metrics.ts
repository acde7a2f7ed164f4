// Prometheus metrics through prom-client: HTTP traffic (registerMetrics), the process's own (CPU,
// memory, event loop: prom-client's default metrics) and the services' (`metrics.counter`).
// With WORKERS > 1 each worker counts its own requests; `/metrics` on any of them asks the primary,
// which gathers every worker's and answers with their sum (prom-client's AggregatorRegistry).
import cluster from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
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

const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30];

/** One label set's traffic: answers by status, and the histogram of their durations. */
interface Series {
  method: string;
  route: string;
  byStatus: Map<number, number>;
  /** Answers per bucket of DURATION_BUCKETS (not cumulative), then those above the last. */
  buckets: number[];
  count: number;
  sum: number;
}

/**
 * HTTP traffic by method, route and status: counted in plain fields and handed to prom-client as
 * its two metrics at each scrape. prom-client's own counter and histogram hash a labels object at
 * every update (1.5% of a billed request's CPU, bench/README.md "Issue 33"). The route pattern,
 * not the URL, keeps the label sets bounded (methods are the HTTP parser's, statuses three digits).
 */
class HttpTraffic {
  private readonly series = new Map<string, Series>();

  count(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route}`;
    let found = this.series.get(key);
    if (!found) {
      const buckets = new Array<number>(DURATION_BUCKETS.length + 1).fill(0);
      found = { method, route, byStatus: new Map(), buckets, count: 0, sum: 0 };
      this.series.set(key, found);
    }
    found.byStatus.set(status, (found.byStatus.get(status) ?? 0) + 1);
    let bucket = 0;
    while (bucket < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[bucket]) bucket++;
    found.buckets[bucket]++;
    found.count++;
    found.sum += seconds;
  }

  /** The two metrics as prom-client's registry reads them (`get()`, summed across workers). */
  metrics() {
    const requests = () =>
      [...this.series.values()].flatMap(({ method, route, byStatus }) =>
        [...byStatus].map(([status, value]) => ({ labels: { method, route, status: String(status) }, value })),
      );
    const durations = (name: string) =>
      [...this.series.values()].flatMap(({ method, route, buckets, count, sum }) => {
        let below = 0;
        const values = DURATION_BUCKETS.map((le, i) => ({
          labels: { le, method, route },
          value: (below += buckets[i]),
          metricName: `${name}_bucket`,
        }));
        return [
          ...values,
          { labels: { le: '+Inf', method, route }, value: count, metricName: `${name}_bucket` },
          { labels: { method, route }, value: sum, metricName: `${name}_sum` },
          { labels: { method, route }, value: count, metricName: `${name}_count` },
        ];
      });
    const metric = (name: string, help: string, type: string, values: (name: string) => object[]) => ({
      name,
      help,
      type,
      aggregator: 'sum' as const,
      get: async () => ({ name, help, type, aggregator: 'sum', values: values(name) }),
      reset: () => this.series.clear(),
    });
    return [
      metric('http_requests_total', 'HTTP requests answered, by method, route and status.', 'counter', requests),
      metric('http_request_duration_seconds', 'Time to answer HTTP requests.', 'histogram', durations),
    ];
  }
}

export function registerMetrics(app: FastifyInstance, metrics: MetricsRegistry) {
  const traffic = new HttpTraffic();
  for (const metric of traffic.metrics()) metrics.registry.registerMetric(metric as unknown as Counter);
  app.addHook('onResponse', (request, reply, done) => {
    traffic.count(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
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
