// An anchor for proxy.bench.ts and streams.bench.ts: the least a Node proxy of this kind does
// (node:http in, undici out, the JSON answer read whole and a field added; a streamed answer
// piped through as it comes), with no framework, accounts, billing or logging. What quartet's node
// costs beyond it is quartet's; what it costs against nginx is Node's. GET /debug/memory answers
// process.memoryUsage() (the streams bench's heap per live stream).
// Usage: node bench/bare-node-proxy.mjs <listen port> <upstream port>
import { createServer } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Pool } from 'undici';
import { forward, readAll } from './anchor-proxy.mjs';

const [port, upstreamPort] = process.argv.slice(2).map(Number);
// No connection cap: one connection per live stream, as many as there are.
const upstream = new Pool(`http://127.0.0.1:${upstreamPort}`);

createServer(async (request, response) => {
  if (request.method === 'GET' && request.url === '/debug/memory') {
    response.writeHead(200, { 'content-type': 'application/json' });
    return response.end(JSON.stringify(process.memoryUsage()));
  }
  try {
    const body = await readAll(request);
    const streamed = JSON.parse(body.toString('utf8')).stream === true;
    const answer = await forward(upstream, request, response, body);
    if (streamed) {
      response.writeHead(answer.statusCode, { 'content-type': answer.headers['content-type'] ?? 'text/event-stream' });
      return await pipeline(answer.body, response);
    }
    const json = JSON.parse((await readAll(answer.body)).toString('utf8'));
    const out = Buffer.from(JSON.stringify({ ...json, cost: { total_msat: 0 } }));
    response.writeHead(answer.statusCode, { 'content-type': 'application/json', 'content-length': out.length });
    response.end(out);
  } catch {
    if (!response.headersSent) response.writeHead(502).end();
    else response.destroy();
  }
}).listen(port, '127.0.0.1');

// An orderly exit, so that a --cpu-prof profile is written.
process.on('SIGTERM', () => process.exit(0));
