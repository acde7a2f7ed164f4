// A small Prometheus registry (text exposition format 0.0.4). Services add their own metrics
// through `metrics.counter` / `metrics.gauge`; HTTP traffic is counted by registerMetrics.
import type { FastifyInstance } from 'fastify';

type Labels = Record<string, string>;

const NEEDS_ESCAPE = /[\\"\n]/;

function escapeLabel(value: string): string {
  // Most values need no escaping; testing first spares three replacements on every request.
  return NEEDS_ESCAPE.test(value) ? value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : value;
}

function labelKey(labels: Labels): string {
  const keys = Object.keys(labels).sort();
  if (keys.length === 0) return '';
  return `{${keys.map((k) => `${k}="${escapeLabel(String(labels[k]))}"`).join(',')}}`;
}

interface Metric {
  render(): string;
}

export class Counter implements Metric {
  private values = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly help: string,
    private kind: 'counter' | 'gauge' = 'counter',
  ) {}
  inc(labels: Labels = {}, by = 1) {
    const key = labelKey(labels);
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }
  set(labels: Labels, value: number) {
    this.values.set(labelKey(labels), value);
  }
  render() {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.kind}`];
    for (const [key, value] of this.values) lines.push(`${this.name}${key} ${value}`);
    return lines.join('\n');
  }
}

export class Histogram implements Metric {
  private series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    private buckets: number[],
  ) {}
  observe(labels: Labels, value: number) {
    const key = labelKey(labels);
    let entry = this.series.get(key);
    if (!entry) {
      entry = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, entry);
    }
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]) entry.counts[i]++;
    entry.sum += value;
    entry.count++;
  }
  render() {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const entry of this.series.values()) {
      this.buckets.forEach((bound, i) =>
        lines.push(`${this.name}_bucket${labelKey({ ...entry.labels, le: String(bound) })} ${entry.counts[i]}`),
      );
      lines.push(`${this.name}_bucket${labelKey({ ...entry.labels, le: '+Inf' })} ${entry.count}`);
      lines.push(`${this.name}_sum${labelKey(entry.labels)} ${entry.sum}`);
      lines.push(`${this.name}_count${labelKey(entry.labels)} ${entry.count}`);
    }
    return lines.join('\n');
  }
}

export class MetricsRegistry {
  private metrics = new Map<string, Metric>();
  counter(name: string, help: string): Counter {
    return this.register(name, () => new Counter(name, help));
  }
  gauge(name: string, help: string): Counter {
    return this.register(name, () => new Counter(name, help, 'gauge'));
  }
  histogram(name: string, help: string, buckets: number[]): Histogram {
    return this.register(name, () => new Histogram(name, help, buckets));
  }
  private register<T extends Metric>(name: string, make: () => T): T {
    const existing = this.metrics.get(name);
    if (existing) return existing as T;
    const metric = make();
    this.metrics.set(name, metric);
    return metric;
  }
  render(): string {
    return [...this.metrics.values()].map((m) => m.render()).join('\n') + '\n';
  }
}

export function registerMetrics(app: FastifyInstance, registry: MetricsRegistry) {
  const requests = registry.counter('http_requests_total', 'HTTP requests answered, by method, route and status.');
  const duration = registry.histogram(
    'http_request_duration_seconds',
    'Time to answer HTTP requests.',
    [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
  );
  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, not the URL, keeps label cardinality bounded.
    const route = request.routeOptions.url ?? 'unmatched';
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    requests.inc(labels);
    duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    done();
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type('text/plain; version=0.0.4; charset=utf-8');
    return registry.render();
  });
}
