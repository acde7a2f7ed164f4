// A billed non-streaming answer: read whole (its usage is in it), settled, its cost added to the
// JSON and the headers, sent (docs/proxy-billing.md).
import type { Readable } from 'node:stream';
import { HttpError } from '../../http/errors.js';
import { jsonTextDeeperThan } from '../../http/json-depth.js';
import { type BilledExchange, changeHeaderFor, costHeaderList, errorWithChange, settle } from './billed-exchange.js';
import { callerResponseHeaderList, readBody, sendWhole, upstreamFailure } from './forward.js';
import { costJson, estimateUsage, readUsage, withUsageCost } from '../billing/metering.js';
import { field, isRecord } from '../../json-fields.js';
import { withMembersAdded } from './json-members.js';

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
  const passed = () => sendWhole(reply, status, [...costHeaders, ...callerResponseHeaderList(headers)], raw);
  // Not a JSON object (an upstream ignoring accept-encoding: identity, say): passed on unchanged (the
  // cost is in the headers).
  if (!isRecord(json) || Array.isArray(json)) return passed();
  const cost = costJson(settled);
  const out = answerWithCost(text, json, cost, change);
  if (!out) return passed();
  sendWhole(reply, status, [...costHeaders, ...callerResponseHeaderList(headers, { dropLength: true })], out);
}

/**
 * The answer with its cost as `cost` and `usage.cost`: inserted into the upstream's text, or, where the
 * upstream sent a `cost` of its own to replace (OpenRouter's `usage.cost`, in USD) or names a member
 * with escapes, set on the parsed answer and serialized. Null for an answer too deep to serialize
 * safely in that case (passed on unchanged).
 */
function answerWithCost(
  text: string,
  json: Record<string, unknown>,
  cost: ReturnType<typeof costJson>,
  change: object,
): string | null {
  const usage = field(json, 'usage');
  if (!Object.hasOwn(json, 'cost') && field(usage, 'cost') === undefined) {
    const inUsage = JSON.stringify(cost);
    const atTop = Object.keys(change).length ? JSON.stringify({ ...cost, ...change }) : inUsage;
    const out = withMembersAdded(text, `"cost":${atTop}`, 'usage', `"cost":${inUsage}`);
    if (out) return out;
  }
  if (jsonTextDeeperThan(text)) return null;
  // The parsed answer is this request's own, so the fields are set on it: a spread copy that then
  // redefined `usage` had V8 rebuild the copy's hidden class on every answer.
  return JSON.stringify(Object.assign(json, { cost: { ...cost, ...change } }, withUsageCost(json, cost)));
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
