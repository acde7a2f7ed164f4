// HTTP load generator, run in a worker thread so the load does not share the event loop with
// whatever the benchmark runs in its own thread. `connections` loops each send a request, wait
// for the whole answer and record the latency. Closed loop by default (the next request goes
// at once: the most the server carries); with `rate`, open loop at that many requests a second
// in all, a request that goes late because the previous answer was late timed from when it was
// due, so a server that falls behind is charged for the wait (no coordinated omission).
import { parentPort, workerData } from 'node:worker_threads';
import { Pool } from 'undici';

const { url, method = 'GET', headers = {}, body, connections, durationMs, warmupMs = 500, rate } = workerData;
// Optional: Authorization headers that the requests take in turn (load spread over many accounts).
const { authorizations = [] } = workerData;
let nextAuthorization = 0;
const headersOf = () =>
  authorizations.length
    ? { ...headers, authorization: authorizations[nextAuthorization++ % authorizations.length] }
    : headers;
const target = new URL(url);
const pool = new Pool(target.origin, { connections, pipelining: 1 });
const path = target.pathname + target.search;
const latencies = [];
let errors = 0;
const statuses = {};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function send(due, record) {
  try {
    const response = await pool.request({ path, method, headers: headersOf(), body });
    await response.body.dump();
    if (record) {
      latencies.push(performance.now() - due);
      statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1;
      if (response.statusCode >= 400) errors++;
    }
  } catch {
    if (record) errors++;
  }
}

async function loop(index, from, until, record) {
  if (!rate) {
    while (performance.now() < until) await send(performance.now(), record);
    return;
  }
  const interval = (connections * 1000) / rate;
  for (let due = from + (index * interval) / connections; due < until; due += interval) {
    const wait = due - performance.now();
    if (wait > 0) {
      // Timers fire up to a millisecond off either way: time from the actual send.
      await sleep(wait);
      await send(performance.now(), record);
    } else {
      await send(due, record); // late because the last answer was: the wait is the server's
    }
  }
}

const run = (from, ms, record) =>
  Promise.all(Array.from({ length: connections }, (_, i) => loop(i, from, from + ms, record)));
await run(performance.now(), warmupMs, false);
const started = performance.now();
await run(started, durationMs, true);
const elapsed = performance.now() - started;
await pool.close();
latencies.sort((a, b) => a - b);
const at = (q) =>
  latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] : NaN;
parentPort.postMessage({
  requests: latencies.length,
  requestsPerSec: (latencies.length / elapsed) * 1000,
  p50Ms: at(0.5),
  p99Ms: at(0.99),
  errors,
  statuses,
});
