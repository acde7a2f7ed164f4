// Closed-loop HTTP load generator, run in a worker thread so the load does not share the
// event loop with the server under test. Each of `connections` loops sends a request,
// waits for the whole answer, records the latency and sends the next.
import { parentPort, workerData } from 'node:worker_threads';
import { Pool } from 'undici';

const { url, method = 'GET', headers = {}, body, connections, durationMs, warmupMs = 500 } = workerData;
const target = new URL(url);
const pool = new Pool(target.origin, { connections, pipelining: 1 });
const path = target.pathname + target.search;
const latencies = [];
let errors = 0;
const statuses = {};

async function loop(until, record) {
  while (performance.now() < until) {
    const started = performance.now();
    try {
      const response = await pool.request({ path, method, headers, body });
      await response.body.dump();
      if (record) {
        latencies.push(performance.now() - started);
        statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1;
        if (response.statusCode >= 400) errors++;
      }
    } catch {
      if (record) errors++;
    }
  }
}

const warmupEnd = performance.now() + warmupMs;
await Promise.all(Array.from({ length: connections }, () => loop(warmupEnd, false)));
const started = performance.now();
const end = started + durationMs;
await Promise.all(Array.from({ length: connections }, () => loop(end, true)));
const elapsed = performance.now() - started;
await pool.close();
latencies.sort((a, b) => a - b);
const at = (q) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] : NaN);
parentPort.postMessage({
  requests: latencies.length,
  requestsPerSec: (latencies.length / elapsed) * 1000,
  p50Ms: at(0.5),
  p99Ms: at(0.99),
  errors,
  statuses,
});
