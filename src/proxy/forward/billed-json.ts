// A billed non-streaming answer: read whole (its usage is in it), settled, its cost added to the
// JSON and the headers, sent (docs/proxy-billing.md).
import type { Readable } from 'node:stream';
import { HttpError } from '../../http/errors.js';
import { jsonTextDeeperThan } from '../../http/json-depth.js';
import { type BilledExchange, changeHeaderFor, costHeaderList, errorWithChange, settle } from './billed-exchange.js';
import { callerResponseHeaderList, readBody, sendWhole, upstreamFailure } from './forward.js';
import { costJson, estimateUsage, readUsage, withUsageCost } from '../billing/metering.js';

export async function sendBilledJson(
  billed: BilledExchange,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  body: Readable,
) {
  const { reply } = billed;
  const raw = await readWholeAnswer(billed, status, body);
  const text = raw.toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const reported = readUsage(json, billed.metered.kind);
  const estimate = () => estimateUsage(billed.metered.raw.length, raw.length);
  const settled = await settle(billed, reported, estimate, status);
  const change = await changeHeaderFor(billed);
  const costHeaders = costHeaderList(reply.request.id, settled);
  if (!json || typeof json !== 'object' || Array.isArray(json) || jsonTextDeeperThan(text)) {
    // Not a JSON object (an upstream ignoring accept-encoding: identity, say), or too deep to
    // re-serialize safely: passed on unchanged (the cost is in the headers).
    return sendWhole(reply, status, [...costHeaders, ...callerResponseHeaderList(headers)], raw);
  }
  const cost = costJson(settled);
  // The parsed answer is this request's own, so the fields are set on it: a spread copy that then
  // redefined `usage` had V8 rebuild the copy's hidden class on every answer.
  const answer = Object.assign(json, { cost: { ...cost, ...change } }, withUsageCost(json, cost));
  const out = Buffer.from(JSON.stringify(answer));
  sendWhole(reply, status, [...costHeaders, ...callerResponseHeaderList(headers, { dropLength: true })], out);
}

/**
 * The upstream's whole answer (at most PROXY_MAX_RESPONSE_BYTES), read before anything is sent: a
 * failed read, or a caller gone meanwhile, releases the reservation (nothing was delivered) and
 * throws the error answer, an X-Cashu payment's change with it.
 */
export async function readWholeAnswer(billed: BilledExchange, status: number, body: Readable): Promise<Buffer> {
  const { deps, reservation } = billed;
  let raw: Buffer;
  try {
    raw = await readBody(body, deps.config.maxResponseBytes);
  } catch (error) {
    await deps.billing.release(reservation, `reading the upstream answer failed: ${(error as Error).message}`, status);
    throw await errorWithChange(billed, unreadableAnswer(error));
  }
  if (billed.caller.cancelled) {
    // Gone while the answer was read: it is never delivered, so it is not billed.
    await deps.billing.release(reservation, 'the caller left before the answer began', status);
    throw upstreamFailure(billed.caller.signal.reason);
  }
  return raw;
}

/** 502 for an upstream answer too large to meter; otherwise as for any upstream failure. */
function unreadableAnswer(error: unknown): HttpError {
  if (error instanceof HttpError && error.status === 413) {
    return new HttpError(502, 'The upstream answer is too large to meter', {
      code: 'upstream_too_large',
      type: 'upstream_error',
    });
  }
  return upstreamFailure(error);
}
