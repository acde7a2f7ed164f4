// HTTP load generator, run in a worker thread so the load does not share the event loop with
// whatever the benchmark runs in its own thread (and the targets, in their own processes, are not
// charged its CPU). `connections` connections, each sending a request, reading the whole answer,
// then the next:
// - closed loop (no `rate`): the next request goes at once, the most the server carries; with
//   `autocannon`, autocannon sends them (the proxy's throughput, as issue 18 measured it; its
//   latencies are whole milliseconds), otherwise undici's Pool;
// - open loop (`rate`): that many requests a second in all, a request that goes late because the
//   previous answer was late timed from when it was due, so a server that falls behind is charged
//   for the wait (no coordinated omission, which autocannon's own rate limit does not avoid).
// `connectionHeaders[i % n]` is added to connection i's requests (one account per connection).
import { parentPort, workerData } from 'node:worker_threads';
import autocannon from 'autocannon';
import { Pool } from 'undici';

const { url, method = 'GET', headers = {}, body, connections, durationMs, warmupMs = 500, rate } = workerData;
const target = new URL(url);
const path = target.pathname + target.search;
const connectionHeaders = workerData.connectionHeaders ?? [{}];
const headersOf = (index) => ({ ...headers, ...connectionHeaders[index % connectionHeaders.length] });

async function autocannonLoop(ms) {
  let next = 0;
  const raw = await autocannon({
    url,
    method,
    body,
    connections,
    duration: ms / 1000,
    sampleInt: 100, // it stops at the first sample after `duration`
    headers: headersOf(0),
    setupClient: (client) => client.setHeaders(headersOf(next++)),
  });
  // In a worker thread autocannon hands back its histograms encoded.
  const result = autocannon.aggregateResult([raw], { url, connections });
  const statuses = {};
  for (const [status, { count }] of Object.entries(result.statusCodeStats)) statuses[status] = count;
  return {
    ok: result['2xx'] + result['3xx'],
    answered: result.requests.total,
    seconds: result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts + result['4xx'] + result['5xx'],
    statuses,
  };
}

async function undiciLoop(ms) {
  const pool = new Pool(target.origin, { connections, pipelining: 1 });
  const latencies = [];
  const statuses = {};
  let errors = 0;
  let ok = 0;
  const sleep = (wait) => new Promise((resolve) => setTimeout(resolve, wait));
  const send = async (index, due) => {
    try {
      const response = await pool.request({ path, method, headers: headersOf(index), body });
      await response.body.dump();
      latencies.push(performance.now() - due);
      statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1;
      if (response.statusCode >= 400) errors++;
      else ok++;
    } catch {
      errors++;
    }
  };
  const interval = (connections * 1000) / rate;
  const loop = async (index, from, until) => {
    if (!rate) {
      while (performance.now() < until) await send(index, performance.now());
      return;
    }
    for (let due = from + (index * interval) / connections; due < until; due += interval) {
      const wait = due - performance.now();
      if (wait > 0) {
        // Timers fire up to a millisecond off either way: time from the actual send.
        await sleep(wait);
        await send(index, performance.now());
      } else {
        await send(index, due); // late because the last answer was: the wait is the server's
      }
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: connections }, (_, i) => loop(i, started, started + ms)));
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const at = (q) =>
    latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] : NaN;
  return { ok, answered: latencies.length, seconds, p50Ms: at(0.5), p99Ms: at(0.99), errors, statuses };
}

const measure = workerData.autocannon && !rate ? autocannonLoop : undiciLoop;
const warmup = warmupMs > 0 ? await measure(warmupMs) : { ok: 0, answered: 0 };
const result = await measure(durationMs);
parentPort.postMessage({
  requests: result.ok,
  requestsPerSec: result.ok / result.seconds,
  p50Ms: result.p50Ms,
  p99Ms: result.p99Ms,
  errors: result.errors,
  statuses: result.statuses,
  answered: warmup.answered + result.answered,
  answeredOk: warmup.ok + result.ok,
});
