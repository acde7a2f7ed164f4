// Usage analytics for the operator (docs/proxy-operator.md, "Usage analytics"), in the shapes of
// Routstr's /admin/api/usage/… answers plus quartet's breakdowns. Everything is read from the
// rollups of ./store.ts, which a job fills from the ledger every ROLL_UP_EVERY_MS (in a thread of its
// own on an SQLite file, ./rollup-thread.ts) and before each answer (at most a few batches): a billed
// request does nothing more than it did.
import type { Database } from '../../db/index.js';
import {
  distinctValues,
  errorTypes,
  grandTotals,
  keyPrefixes,
  latencyBy,
  latencyByBucket,
  latencyTotal,
  latestErrors,
  MINUTE_MS,
  percentilesOf,
  rangeOf,
  rollUpOnce,
  totalsBy,
  totalsByBucket,
  totalsByBucketAndModel,
  type Dimension,
  type Percentiles,
  type Range,
  type Totals,
} from './store.js';
import { RollUpThread } from './rollup-thread.js';

const ROLL_UP_EVERY_MS = 10_000;
/** Batches a query rolls up before answering (the job catches up with the rest). */
const BATCHES_BEFORE_ANSWER = 5;
/** Most time buckets an answer has: a finer interval over a longer range is widened to fit. */
export const MAX_BUCKETS = 1000;
/** Routstr's bound of a range: 12 months. */
export const MAX_HOURS = 365 * 24;
/** Models in the usage mix (Routstr's 20 at most). */
const MIX_MODELS = 20;

interface Logger {
  error(obj: object, msg: string): void;
}

/** The empty model is a flat-price write's; Routstr calls a request without a model "unknown". */
const modelName = (model: string) => model || 'unknown';
const providerName = (provider: string) => provider || 'none';

/** "YYYY-MM-DD HH:MM:SS" in UTC, as Routstr's answers write times. */
export function routstrTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

const histogram = (rows: { bin: number; n: number }[]) => {
  const bins = new Map<number, number>();
  for (const { bin, n } of rows) bins.set(bin, (bins.get(bin) ?? 0) + Number(n));
  return bins;
};

function numbers(row: Totals): Totals {
  // PostgreSQL's bigints arrive parsed (src/db/index.ts); SQLite's are numbers already.
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)])) as Totals;
}

/** A time series' interval: at least a minute (an hour on hour rows), at most MAX_BUCKETS buckets. */
function bucketMsOf(intervalMinutes: number, hours: number, range: Range): number {
  let minutes = Math.max(intervalMinutes, Math.ceil((hours * 60) / MAX_BUCKETS));
  if (range.grain === 'h') minutes = Math.ceil(minutes / 60) * 60;
  return minutes * MINUTE_MS;
}

export class UsageAnalytics {
  private timer: NodeJS.Timeout | null = null;
  /** Where the job runs on an SQLite file (see start()). */
  private thread: RollUpThread | null = null;
  /** The timer's run under way (a new one is not queued behind it). */
  private job: Promise<void> | null = null;
  /** Any run under way in this process, the timer's or an answer's (see inTurn). */
  private running: Promise<void> | null = null;

  /** `everyMs`: how often the job runs (tests shorten it). */
  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    private readonly everyMs = ROLL_UP_EVERY_MS,
  ) {}

  start(): void {
    // SQLite works in the calling thread: a file's job runs in a thread of its own. PostgreSQL's
    // work is the server's, and an in-memory database cannot be shared with a thread.
    const thread = this.db.dialect === 'sqlite' && this.db.file !== null ? new RollUpThread(this.db.file) : null;
    this.thread = thread;
    this.timer = setInterval(() => {
      // A run still under way (a long backlog) is not queued again: the next one catches up.
      if (this.job) return;
      this.job = (thread ? this.inTurn(() => thread.rollUp()) : this.refresh(Infinity))
        .catch((error) => this.log.error({ err: error }, 'rolling up usage failed'))
        .finally(() => (this.job = null));
    }, this.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.job;
    await this.running?.catch(() => {});
    await this.thread?.close();
    this.thread = null;
  }

  /** Rolls the ledger up here (as an answer needs it); the state row's lock keeps other runs apart. */
  refresh(batches = BATCHES_BEFORE_ANSWER): Promise<void> {
    return this.inTurn(async () => {
      for (let i = 0; i < batches; i++) {
        if (!(await rollUpOnce(this.db, Date.now())).more) break;
      }
    });
  }

  /** One run at a time in this process (the job's and the answers'). */
  private async inTurn(work: () => Promise<void>): Promise<void> {
    while (this.running) await this.running.catch(() => {});
    const run = work();
    this.running = run;
    try {
      await run;
    } finally {
      if (this.running === run) this.running = null;
    }
  }

  // --- Routstr's answers ---------------------------------------------------------------------

  /** GET /admin/api/usage/metrics */
  async metrics(interval: number, hours: number) {
    await this.refresh();
    return this.metricsOf(interval, hours, rangeOf(hours, Date.now()));
  }

  private async metricsOf(interval: number, hours: number, range: Range) {
    const bucketMs = bucketMsOf(interval, hours, range);
    const db = this.db.kysely;
    const [rows, latencies] = await Promise.all([
      totalsByBucket(db, range, bucketMs),
      latencyByBucket(db, range, bucketMs),
    ]);
    const byBucket = new Map<number, { bin: number; n: number }[]>();
    for (const row of latencies) {
      const bucket = Number(row.bucket);
      const list = byBucket.get(bucket) ?? [];
      list.push({ bin: row.bin, n: Number(row.n) });
      byBucket.set(bucket, list);
    }
    const totals = emptyTotals();
    const points = rows.map((raw) => {
      const { bucket, ...counters } = raw;
      const t = numbers(counters as Totals);
      for (const key of Object.keys(totals) as (keyof Totals)[]) totals[key] += t[key];
      return {
        timestamp: routstrTime(Number(bucket)),
        ...routstrCounters(t),
        requests: t.requests,
        // quartet's additions
        charged_msat: t.charged_msat,
        cost_msat: t.cost_msat,
        latency: latencyOf(t, histogram(byBucket.get(Number(bucket)) ?? [])),
      };
    });
    return {
      metrics: points,
      interval_minutes: bucketMs / MINUTE_MS,
      hours_back: hours,
      total_buckets: points.length,
      totals: { ...routstrCounters(totals), charged_msat: totals.charged_msat, cost_msat: totals.cost_msat },
    };
  }

  /** GET /admin/api/usage/summary */
  async summary(hours: number) {
    await this.refresh();
    return this.summaryOf(rangeOf(hours, Date.now()));
  }

  private async summaryOf(range: Range) {
    const db = this.db.kysely;
    const [totals, models, providers, types, latencies] = await Promise.all([
      grandTotals(db, range),
      distinctValues(db, range, 'model', 1_000),
      distinctValues(db, range, 'provider', 1_000),
      errorTypes(db, range.since, 100),
      latencyTotal(db, range),
    ]);
    const t = numbers(totals);
    const errorTypeCounts = Object.create(null) as Record<string, number>;
    for (const row of types) errorTypeCounts[row.error_type] = Number(row.n);
    const uniqueModels = models.map((model) => modelName(String(model)));
    const tokens = t.input_tokens + t.output_tokens;
    const per = (value: number) => (t.settled > 0 ? value / t.settled : 0);
    return {
      total_entries: t.requests,
      total_requests: t.requests,
      successful_chat_completions: t.settled,
      failed_requests: t.failed,
      total_errors: t.failed,
      total_warnings: 0,
      payment_processed: t.settled,
      upstream_errors: t.upstream_errors,
      unique_models_count: uniqueModels.length,
      unique_models: uniqueModels,
      error_types: errorTypeCounts,
      input_tokens: t.input_tokens,
      output_tokens: t.output_tokens,
      total_tokens: tokens,
      avg_input_tokens_per_completion: per(t.input_tokens),
      avg_output_tokens_per_completion: per(t.output_tokens),
      avg_total_tokens_per_completion: per(tokens),
      success_rate: t.requests > 0 ? (t.settled / t.requests) * 100 : 0,
      revenue_msats: t.charged_msat,
      refunds_msats: 0,
      revenue_sats: t.charged_msat / 1000,
      refunds_sats: 0,
      net_revenue_msats: t.charged_msat,
      net_revenue_sats: t.charged_msat / 1000,
      avg_revenue_per_request_msats: per(t.charged_msat),
      refund_rate: t.requests > 0 ? (t.failed / t.requests) * 100 : 0,
      // quartet's additions
      charged_msat: t.charged_msat,
      cost_msat: t.cost_msat,
      providers: providers.map((provider) => providerName(String(provider))),
      latency: latencyOf(t, histogram(latencies)),
    };
  }

  /** GET /admin/api/usage/revenue-by-model */
  async revenueByModel(hours: number, limit: number) {
    await this.refresh();
    return this.revenueOf(rangeOf(hours, Date.now()), limit);
  }

  private async revenueOf(range: Range, limit: number) {
    const db = this.db.kysely;
    const [{ rows, count }, totals] = await Promise.all([totalsBy(db, range, 'model', limit), grandTotals(db, range)]);
    const revenue = Number(totals.charged_msat) / 1000;
    return {
      models: rows.map((row) => {
        const t = numbers(row as unknown as Totals);
        const sats = t.charged_msat / 1000;
        return {
          model: modelName(String(row.value)),
          revenue_sats: sats,
          refunds_sats: 0,
          net_revenue_sats: sats,
          requests: t.requests,
          successful: t.settled,
          failed: t.failed,
          avg_revenue_per_request: t.settled > 0 ? sats / t.settled : 0,
          // quartet's additions
          revenue_msat: t.charged_msat,
          input_tokens: t.input_tokens,
          output_tokens: t.output_tokens,
        };
      }),
      total_revenue_sats: revenue,
      total_models: Number(count),
    };
  }

  /** GET /admin/api/usage/error-details */
  async errorDetails(hours: number, limit: number) {
    await this.refresh();
    return this.errorsOf(rangeOf(hours, Date.now()), limit);
  }

  private async errorsOf(range: Range, limit: number) {
    const { errors, count } = await latestErrors(this.db.kysely, range.since, limit);
    return {
      errors: errors.map((row) => ({
        timestamp: routstrTime(row.at),
        message: row.message,
        error_type: row.error_type,
        pathname: row.path,
        lineno: 0,
        request_id: row.request_id ?? '',
        // quartet's additions
        model: modelName(row.model),
        provider: providerName(row.provider),
        status: row.status,
        upstream_status: row.upstream_status,
        key_id: row.account_id,
      })),
      total_count: Number(count),
    };
  }

  /** GET /admin/api/usage/dashboard: everything above in one answer, and the model mix. */
  async dashboard(interval: number, hours: number, errorLimit: number, modelLimit: number) {
    await this.refresh();
    const range = rangeOf(hours, Date.now());
    const [metrics, summary, errorDetails, revenue, mix] = await Promise.all([
      this.metricsOf(interval, hours, range),
      this.summaryOf(range),
      this.errorsOf(range, errorLimit),
      this.revenueOf(range, modelLimit),
      this.mixOf(interval, hours, range, Math.min(modelLimit, MIX_MODELS)),
    ]);
    return { metrics, summary, error_details: errorDetails, revenue_by_model: revenue, model_usage_mix: mix };
  }

  /** Routstr's model mix: per bucket, the top models' requests, revenue and tokens, the rest as "others". */
  private async mixOf(interval: number, hours: number, range: Range, limit: number) {
    const db = this.db.kysely;
    const bucketMs = bucketMsOf(interval, hours, range);
    const models = (await totalsBy(db, range, 'model', 1_000)).rows.filter((row) => row.value !== '');
    const top = (key: 'settled' | 'charged_msat' | 'tokens') =>
      [...models]
        .map((row) => ({
          model: String(row.value),
          amount: key === 'tokens' ? Number(row.input_tokens) + Number(row.output_tokens) : Number(row[key]),
        }))
        .filter((row) => row.amount > 0)
        .sort((a, b) => b.amount - a.amount)
        .slice(0, limit)
        .map((row) => row.model);
    const byRequests = top('settled');
    const byRevenue = top('charged_msat');
    const byTokens = top('tokens');
    const selected = [...new Set([...byRequests, ...byRevenue, ...byTokens])];
    const [totals, perModel] = await Promise.all([
      totalsByBucket(db, range, bucketMs),
      totalsByBucketAndModel(db, range, bucketMs, selected),
    ]);
    const cells = new Map<number, typeof perModel>();
    for (const row of perModel) {
      const bucket = Number(row.bucket);
      cells.set(bucket, [...(cells.get(bucket) ?? []), row]);
    }
    const metrics = totals.map((row) => {
      const bucket = Number(row.bucket);
      const counts = Object.create(null) as Record<string, number>;
      const revenue = Object.create(null) as Record<string, number>;
      const tokens = Object.create(null) as Record<string, number>;
      let [topCount, topRevenue, topTokens] = [0, 0, 0];
      for (const cell of cells.get(bucket) ?? []) {
        const model = cell.model;
        const [n, msat, tok] = [
          Number(cell.settled),
          Number(cell.charged_msat),
          Number(cell.input_tokens) + Number(cell.output_tokens),
        ];
        if (n) counts[model] = n;
        if (msat) revenue[model] = msat;
        if (tok) tokens[model] = tok;
        [topCount, topRevenue, topTokens] = [topCount + n, topRevenue + msat, topTokens + tok];
      }
      const allTokens = Number(row.input_tokens) + Number(row.output_tokens);
      return {
        timestamp: routstrTime(bucket),
        total_successful: Number(row.settled),
        total_revenue_msats: Number(row.charged_msat),
        total_tokens: allTokens,
        others: Number(row.settled) - topCount,
        others_revenue_msats: Number(row.charged_msat) - topRevenue,
        others_tokens: allTokens - topTokens,
        model_counts: counts,
        model_revenue_msats: revenue,
        model_tokens: tokens,
      };
    });
    return {
      top_models: byRequests,
      top_models_by_metric: { requests: byRequests, revenue: byRevenue, tokens: byTokens },
      metrics,
      interval_minutes: bucketMs / MINUTE_MS,
      hours_back: hours,
      total_buckets: metrics.length,
    };
  }

  // --- quartet's breakdown --------------------------------------------------------------------

  /** GET /admin/api/usage/breakdown: totals and latency percentiles per model, provider or key. */
  async breakdown(by: 'model' | 'provider' | 'key', hours: number, limit: number) {
    await this.refresh();
    const dimension: Dimension = by === 'key' ? 'account_id' : by;
    const range = rangeOf(hours, Date.now(), by === 'key');
    const db = this.db.kysely;
    const { rows, count } = await totalsBy(db, range, dimension, limit);
    const values = rows.map((row) => row.value);
    const [latencies, prefixes] = await Promise.all([
      latencyBy(db, range, dimension, values),
      by === 'key' ? keyPrefixes(db, values.map(Number)) : Promise.resolve(new Map<number, string | null>()),
    ]);
    const histograms = new Map<string, { bin: number; n: number }[]>();
    for (const row of latencies) {
      const id = String(row.value);
      histograms.set(id, [...(histograms.get(id) ?? []), { bin: row.bin, n: Number(row.n) }]);
    }
    return {
      by,
      hours_back: hours,
      since: new Date(range.since).toISOString(),
      rows: rows.map((row) => {
        const t = numbers(row as unknown as Totals);
        const name =
          by === 'key'
            ? { key_id: Number(row.value), key_prefix: prefixes.get(Number(row.value)) ?? null }
            : by === 'model'
              ? { model: modelName(String(row.value)) }
              : { provider: providerName(String(row.value)) };
        return {
          ...name,
          requests: t.requests,
          successful: t.settled,
          failed: t.failed,
          upstream_errors: t.upstream_errors,
          input_tokens: t.input_tokens,
          output_tokens: t.output_tokens,
          total_tokens: t.input_tokens + t.output_tokens,
          charged_msat: t.charged_msat,
          cost_msat: t.cost_msat,
          latency: latencyOf(t, histogram(histograms.get(String(row.value)) ?? [])),
        };
      }),
      total_rows: Number(count),
    };
  }
}

function emptyTotals(): Totals {
  return {
    requests: 0,
    settled: 0,
    failed: 0,
    upstream_errors: 0,
    input_tokens: 0,
    output_tokens: 0,
    charged_msat: 0,
    cost_msat: 0,
    latency_ms: 0,
  };
}

/** Routstr's counters of a bucket or range, from the rollup's. */
function routstrCounters(t: Totals) {
  return {
    total_requests: t.requests,
    successful_chat_completions: t.settled,
    failed_requests: t.failed,
    errors: t.failed,
    warnings: 0,
    payment_processed: t.settled,
    upstream_errors: t.upstream_errors,
    revenue_msats: t.charged_msat,
    refunds_msats: 0,
    input_tokens: t.input_tokens,
    output_tokens: t.output_tokens,
    total_tokens: t.input_tokens + t.output_tokens,
  };
}

/** Latency of the settled requests: mean and percentiles (from the histogram, within 10%). */
function latencyOf(t: Totals, bins: Map<number, number>): Percentiles & { avg_ms: number | null } {
  return { avg_ms: t.settled > 0 ? Math.round(t.latency_ms / t.settled) : null, ...percentilesOf(bins) };
}
