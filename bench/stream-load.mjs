// Streamed-completion load generator for streams.bench.ts, run in a worker thread so its CPU is
// not the target's. Opens `streams` concurrent streamed requests to `url`, evenly over `rampMs`,
// reads every SSE event of every answer and waits for all of them to end (none is abandoned, so
// a billing total can be compared exactly). Reports time to first byte of the answer's body
// (from when the request was due) p50/p99, events received, streams that ended with `[DONE]`,
// errors, and the sum of the `cost.total_msat` the answers reported. Posts {phase: 'live'} once
// every stream has its first byte and {phase: 'draining'} when the first one ends: between them
// all `streams` are live at once (if the ramp is shorter than a stream).
import { parentPort, workerData } from 'node:worker_threads';
import { Pool } from 'undici';

const { url, headers = {}, body, streams, rampMs = 0, timeoutMs = 120_000 } = workerData;
const target = new URL(url);
const pool = new Pool(target.origin, {
  connections: streams,
  pipelining: 1,
  headersTimeout: timeoutMs,
  bodyTimeout: timeoutMs,
});
const path = target.pathname + target.search;
const ttfb = [];
let events = 0;
let completed = 0;
let costMsat = 0;
const errors = {};
let firstBytes = 0;
let ended = 0;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const fail = (reason) => (errors[reason] = (errors[reason] ?? 0) + 1);

/** Counts the events of one answer, adds up the cost its usage event reports; true when it saw [DONE]. */
function eventReader() {
  let tail = '';
  let done = false;
  const read = (event) => {
    events++;
    const data = event.startsWith('data: ') ? event.slice(6) : '';
    if (data === '[DONE]') done = true;
    else if (data.includes('"total_msat"')) {
      const cost = JSON.parse(data).cost?.total_msat;
      if (typeof cost === 'number') costMsat += cost;
    }
  };
  return {
    push(text) {
      tail += text;
      let at;
      while ((at = tail.indexOf('\n\n')) >= 0) {
        read(tail.slice(0, at));
        tail = tail.slice(at + 2);
      }
    },
    end() {
      if (tail.trim()) read(tail.trim());
      return done;
    },
  };
}

async function stream(due) {
  const wait = due - performance.now();
  if (wait > 0) await sleep(wait);
  const started = performance.now();
  let first = true;
  try {
    const response = await pool.request({ path, method: 'POST', headers, body });
    if (response.statusCode !== 200) {
      await response.body.dump();
      return fail(`status ${response.statusCode}`);
    }
    response.body.setEncoding('utf8');
    const reader = eventReader();
    for await (const text of response.body) {
      if (first) {
        first = false;
        ttfb.push(performance.now() - started);
        if (++firstBytes === streams) parentPort.postMessage({ phase: 'live' });
      }
      reader.push(text);
    }
    if (reader.end()) completed++;
    else fail('ended without [DONE]');
  } catch (error) {
    fail(error?.code ?? error?.message ?? String(error));
  } finally {
    if (first && ++firstBytes === streams) parentPort.postMessage({ phase: 'live' });
    if (++ended === 1) parentPort.postMessage({ phase: 'draining' });
  }
}

const start = performance.now();
await Promise.all(Array.from({ length: streams }, (_, i) => stream(start + (rampMs * i) / streams)));
const elapsedMs = performance.now() - start;
await pool.close();
ttfb.sort((a, b) => a - b);
const at = (q) => (ttfb.length ? ttfb[Math.min(ttfb.length - 1, Math.floor(q * ttfb.length))] : NaN);
parentPort.postMessage({
  phase: 'result',
  result: {
    streams,
    completed,
    events,
    costMsat,
    errors,
    errorCount: Object.values(errors).reduce((a, b) => a + b, 0),
    ttfbP50Ms: at(0.5),
    ttfbP99Ms: at(0.99),
    elapsedMs,
  },
});
