// An anchor for proxy.bench.ts: the least a Node proxy of this kind does (node:http in, undici
// out, the JSON answer read whole and a field added), with no framework, accounts, billing or
// logging. What quartet's node costs beyond it is quartet's; what it costs against nginx is
// Node's. Usage: node bench/bare-node-proxy.mjs <listen port> <upstream port>
import { createServer } from 'node:http';
import { Pool } from 'undici';

const [port, upstreamPort] = process.argv.slice(2).map(Number);
const upstream = new Pool(`http://127.0.0.1:${upstreamPort}`, { connections: 256 });

async function readAll(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

createServer(async (request, response) => {
  try {
    const body = await readAll(request);
    JSON.parse(body.toString('utf8'));
    const answer = await upstream.request({
      path: request.url,
      method: request.method,
      headers: { 'content-type': 'application/json' },
      body,
    });
    const json = JSON.parse((await readAll(answer.body)).toString('utf8'));
    const out = Buffer.from(JSON.stringify({ ...json, cost: { total_msat: 0 } }));
    response.writeHead(answer.statusCode, { 'content-type': 'application/json', 'content-length': out.length });
    response.end(out);
  } catch {
    response.writeHead(502).end();
  }
}).listen(port, '127.0.0.1');
