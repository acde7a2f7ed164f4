// An X-Cashu stream answered as Routstr's node answers it (docs/proxy-billing.md, "X-Cashu
// streams"): the upstream stream is read to its end (within the bounds of a JSON answer:
// PROXY_MAX_RESPONSE_BYTES, and PROXY_UPSTREAM_TIMEOUT_MS of silence), billed, and sent as one
// text/event-stream body, the change in the X-Cashu header and the cost in the headers, where
// Routstr's SDK reads them once the answer's headers arrive. `X-Cashu-Stream: live` opts out
// (billed-stream.ts: events as they come, the change by refund).
import type { FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { type BilledExchange, changeHeaderFor, type Settled, setCostHeaders, settle } from './billed-exchange.js';
import { readWholeAnswer } from './billed-json.js';
import { callerResponseHeaders } from './forward.js';
import { costJson, estimateUsage, withUsageCost } from '../billing/metering.js';
import { SseMeter, withFields } from '../billing/metering-stream.js';

/** The request header by which an X-Cashu payer asks for a live stream (change by refund). */
export const LIVE_STREAM_HEADER = 'x-cashu-stream';

/** Whether an X-Cashu stream is passed on live: only when its caller asks (`X-Cashu-Stream: live`). */
export function wantsLiveStream(request: FastifyRequest): boolean {
  const value = request.headers[LIVE_STREAM_HEADER];
  return typeof value === 'string' && value.trim().toLowerCase() === 'live';
}

export async function sendWholeStream(
  billed: BilledExchange,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  body: Readable,
) {
  const { deps, reply, reservation } = billed;
  const raw = await readWholeAnswer(billed, status, body);
  const meter = new SseMeter(billed.metered.kind);
  const all = [...meter.push(raw), ...meter.end()];
  // As a live stream: nothing after `[DONE]`, billed from the first event reporting usage.
  const end = all.findIndex((event) => event.done);
  const events = end === -1 ? all : all.slice(0, end + 1);
  const usageAt = events.findIndex((event) => event.usage);
  const reported = usageAt === -1 ? null : events[usageAt].usage;
  let settled: Settled;
  if (reported || meter.contentBytes > 0) {
    const estimate = () => estimateUsage(billed.metered.raw.length, meter.contentBytes);
    settled = await settle(billed, reported, estimate, status);
  } else {
    await deps.billing.release(reservation, 'stream ended without content or usage', status);
    settled = { cost: { inputMsat: 0, outputMsat: 0, requestMsat: 0, totalMsat: 0 }, charged: 0, chargedUsd: 0 };
  }
  setCostHeaders(reply, settled);
  const change = await changeHeaderFor(billed);
  const cost = costJson(settled);
  const out = Buffer.concat(
    events.map((event, i) =>
      i === usageAt && event.json
        ? Buffer.from(withFields(event, { cost: { ...cost, ...change }, ...withUsageCost(event.json, cost) }))
        : event.bytes,
    ),
  );
  return reply
    .code(status)
    .headers(callerResponseHeaders(headers, { dropLength: true }))
    .header('cache-control', 'no-cache')
    .header('content-length', String(out.length))
    .send(out);
}
