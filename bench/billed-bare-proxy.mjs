// An anchor for proxy.bench.ts: the bare Node proxy (bare-node-proxy.mjs) plus quartet's durable
// billing and nothing else. Each request's account is found by its key's hash (remembered after
// the first lookup, as quartet does), a reservation is held before the upstream is called and
// settled from the answer's usage after, through quartet's own Billing module (compiled, dist/):
// the same group-committed SQLite or PostgreSQL transactions. No framework, validation, pricing
// table, metering of streams, headers, logging or metrics. What quartet costs beyond this anchor
// is its HTTP stack and features; what this anchor costs beyond the bare proxy is durable billing.
// Usage: node bench/billed-bare-proxy.mjs <listen port> <upstream port> <DATABASE_URL, migrated>
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { Pool } from 'undici';
import { parseDatabaseUrl } from '../dist/config.js';
import { openDatabase } from '../dist/db/index.js';
import { Billing } from '../dist/proxy/billing/billing.js';
import { forward, readAll } from './anchor-proxy.mjs';

const [port, upstreamPort] = process.argv.slice(2, 4).map(Number);
const db = await openDatabase(parseDatabaseUrl(process.argv[4]));
const billing = new Billing(db, { staleReservationMs: 60_000 }, console);
billing.start();
const upstream = new Pool(`http://127.0.0.1:${upstreamPort}`);
const RESERVE_MSAT = 100_000;
const MSAT_PER_TOKEN = 10;
const accounts = new Map();

async function accountOf(authorization) {
  const hash = createHash('sha256')
    .update(/^Bearer (.+)$/.exec(authorization ?? '')?.[1] ?? '')
    .digest('hex');
  let id = accounts.get(hash);
  if (id === undefined) {
    const row = await db.kysely
      .selectFrom('proxy_accounts')
      .select('id')
      .where('key_hash', '=', hash)
      .executeTakeFirst();
    if (!row) return undefined;
    accounts.set(hash, (id = row.id));
  }
  return id;
}

let requests = 0;
createServer(async (request, response) => {
  let reservation = null;
  try {
    const body = await readAll(request);
    const { model } = JSON.parse(body.toString('utf8'));
    const accountId = await accountOf(request.headers.authorization);
    if (accountId === undefined) return response.writeHead(401).end();
    ({ reservation } = await billing.reserve({
      accountId,
      amountFor: (available) => (available >= RESERVE_MSAT ? RESERVE_MSAT : null),
      requestId: `bench-${requests++}`,
      path: request.url,
      model: String(model),
      stream: false,
      payment: 'key',
    }));
    if (!reservation) return response.writeHead(402).end();
    const answer = await forward(upstream, request, response, body);
    const json = JSON.parse((await readAll(answer.body)).toString('utf8'));
    const usage = { promptTokens: json.usage.prompt_tokens, completionTokens: json.usage.completion_tokens };
    const [inputMsat, outputMsat] = [usage.promptTokens * MSAT_PER_TOKEN, usage.completionTokens * MSAT_PER_TOKEN];
    const cost = { inputMsat, outputMsat, requestMsat: 0, totalMsat: inputMsat + outputMsat };
    const charged = await billing.settle(reservation, {
      cost,
      usage,
      usageSource: 'upstream',
      upstreamStatus: answer.statusCode,
    });
    reservation = null;
    const out = Buffer.from(JSON.stringify({ ...json, cost: { total_msat: charged } }));
    response.writeHead(answer.statusCode, { 'content-type': 'application/json', 'content-length': out.length });
    response.end(out);
  } catch {
    if (reservation) await billing.release(reservation, 'failed').catch(() => {});
    if (!response.headersSent) response.writeHead(502).end();
    else response.destroy();
  }
}).listen(port, '127.0.0.1');

// An orderly exit, so that a --cpu-prof profile is written.
process.on('SIGTERM', () => process.exit(0));
