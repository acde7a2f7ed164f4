// Shared pieces of the benchmarks: a load generator in a worker thread and the result type.
// Benchmarks compare against an anchor measured in the same run and report ratios, because
// absolute numbers on shared machines mean little.
import { Worker } from 'node:worker_threads';

export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  /** What the value is compared with, measured in the same run. */
  anchor?: string;
  anchorValue?: number;
  /** value / anchorValue (or the inverse for lower-is-better units; say which in notes). */
  ratio?: number;
  goal?: string;
  notes?: string;
}

export interface LoadOptions {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  durationMs: number;
  warmupMs?: number;
  /** Requests a second in all (open loop); without it each connection sends as fast as answered. */
  rate?: number;
  /** Closed loop by autocannon rather than undici (latencies in whole milliseconds). */
  autocannon?: boolean;
  /** Added to connection i's headers: `connectionHeaders[i % length]` (say one account per connection). */
  connectionHeaders?: Record<string, string>[];
}

export interface LoadResult {
  /** Answers below 400 in the measured time, and their rate. */
  requests: number;
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  statuses: Record<string, number>;
  /** Every answer, warm-up included: what the server's CPU time in the whole call went to. */
  answered: number;
  /** Answers below 400, warm-up included. */
  answeredOk: number;
}

export function httpLoad(options: LoadOptions): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./load-worker.mjs', import.meta.url), { workerData: options });
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`load worker exited with ${code}`));
    });
  });
}

/** Durations scale with BENCH_SCALE (e.g. 0.2 for a quick smoke run). */
export function benchDuration(ms: number): number {
  const scale = Number(process.env.BENCH_SCALE ?? '1');
  return Math.max(200, Math.round(ms * (Number.isFinite(scale) && scale > 0 ? scale : 1)));
}

/** The middle value (the mean of the middle two of an even count); NaN for none. */
export function median(values: number[]): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Latency percentiles of a list of samples in milliseconds. */
export function percentiles(samples: number[]): { p50: number; p99: number; mean: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p99: at(0.99), mean: sorted.reduce((a, b) => a + b, 0) / sorted.length };
}
