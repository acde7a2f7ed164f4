// What the Node anchors of proxy.bench.ts and streams.bench.ts share: bare-node-proxy.mjs and
// billed-bare-proxy.mjs read bodies whole and send a request on to the upstream the same way.
// They keep one nextTick entry alive as quartet's CLI does (src/tick-shape.ts): without it a
// process's nextTick may turn megamorphic after a quiet GC, and an anchor's figure would depend on
// whether its did (bench/README.md, run O).
import '../dist/tick-shape.js';

export async function readAll(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * Sends the caller's JSON request on to the upstream (an undici Pool). Only a caller gone before
 * its answer is complete cancels it: aborting after every answer made a DOMException (a stack
 * trace) per request, 7% of the bare proxy's CPU (bench/README.md).
 */
export function forward(upstream, request, response, body) {
  const abort = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) abort.abort();
  });
  return upstream.request({
    path: request.url,
    method: request.method,
    headers: { 'content-type': 'application/json' },
    body,
    signal: abort.signal,
  });
}
