// A billed request (a model-using POST, see ../billing/metering.ts): metered, priced, its payer found, its
// price reserved, forwarded, and settled from the upstream's usage (docs/proxy-billing.md).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../../http/errors.js';
import { type BilledExchange, changeHeaderFor, errorWithChange, setCostHeaders } from './billed-exchange.js';
import type { ForwardDeps } from './forward-deps.js';
import { sendBilledJson } from './billed-json.js';
import { sendBilledStream } from './billed-stream.js';
import { sendWholeStream, wantsLiveStream } from './billed-sse-whole.js';
import {
  type CallerConnection,
  callerResponseHeaders,
  type ProviderRoute,
  readBody,
  RESERVED_HEADER,
  upstreamFailure,
  upstreamRequestHeaders,
} from './forward.js';
import {
  type BilledKind,
  meterRequest,
  outputLimits,
  planReservation,
  type ReservationPlan,
  upstreamBody,
} from '../billing/metering.js';
import { identifyPayer } from './payer.js';
import { reserve } from './reservation.js';
import { routeOf } from './upstreams.js';

export interface BilledCall {
  request: FastifyRequest;
  reply: FastifyReply;
  caller: CallerConnection;
  kind: BilledKind;
  /** The normalized path, as the ledger records it. */
  path: string;
  pathAndQuery: string;
}

export async function forwardBilled(deps: ForwardDeps, call: BilledCall) {
  const { config, pricing, billing } = deps;
  const { request } = call;
  const metered = meterRequest(call.kind, await readBody(request.raw, config.maxBodyBytes));
  const model = pricing.model(metered.model);
  if (!model) {
    throw new HttpError(
      400,
      `Unknown model "${metered.model}". This node prices: ${[...pricing.models.keys()].join(', ')} (see GET /)`,
      { code: 'model_not_found' },
    );
  }
  const { price, btcUsd } = pricing.cachedQuote(model) ?? (await pricing.quote(model));
  const limits = outputLimits(model, config);
  // A node at its operator's limit says so before a token is swapped or a reservation made.
  const route = routeOf(request, call.path, model.id);
  deps.upstream.checkCapacity(route);

  const payer = await identifyPayer(deps, request, () => planReservation(metered, price, 0, limits));
  const { reservation, plan } = await reserve(deps, {
    request,
    path: call.path,
    payer,
    modelId: model.id,
    stream: metered.stream,
    planning: (available) => planReservation(metered, price, available, limits),
    signal: call.caller.signal,
  });
  const billed: BilledExchange = {
    deps,
    request,
    reply: call.reply,
    caller: call.caller,
    metered,
    model,
    price,
    btcUsd,
    reservation,
    ceilingMsat: plan.ceilingMsat,
    payer,
    roundToSat: payer.payment === 'x-cashu',
  };
  return billing.hold(
    serveReserved(billed, call.pathAndQuery, route, plan).finally(() =>
      billing.abandon(reservation, 'the request failed before it was settled'),
    ),
  );
}

/** Forwards a request whose reservation is held, and settles or releases it whatever happens. */
async function serveReserved(
  billed: BilledExchange,
  pathAndQuery: string,
  route: ProviderRoute,
  plan: ReservationPlan,
) {
  const { deps, request, reply, metered, reservation } = billed;
  const { billing } = deps;
  const body = upstreamBody(metered, plan);
  let response;
  try {
    response = await deps.upstream.request({
      method: 'POST',
      pathAndQuery,
      route,
      headers: upstreamRequestHeaders(request.raw.headers, { length: body.length }),
      body,
      // A provider naming the model otherwise gets the body with its own id.
      bodyFor: (id) => (id === metered.model ? body : withModel(body, id)),
      // A caller gone by now (while its reservation waited, say) is never sent upstream.
      signal: billed.caller.signal,
    });
  } catch (error) {
    await billing.release(reservation, (error as Error).message);
    throw await errorWithChange(billed, upstreamFailure(error));
  }
  // Its settle or release records who answered (usage analytics).
  reservation.provider = response.provider;
  reply.header(RESERVED_HEADER, String(reservation.reservedMsat));
  if (response.statusCode < 200 || response.statusCode >= 300) {
    // The upstream refused or failed: nothing is charged, its answer is passed on.
    await billing.release(reservation, `upstream answered ${response.statusCode}`, response.statusCode);
    const nothing = { inputMsat: 0, outputMsat: 0, requestMsat: 0, totalMsat: 0 };
    setCostHeaders(reply, { cost: nothing, charged: 0, chargedUsd: 0 });
    await changeHeaderFor(billed);
    return reply.code(response.statusCode).headers(callerResponseHeaders(response.headers)).send(response.body);
  }
  const type = String(response.headers['content-type'] ?? '');
  if (type.includes('text/event-stream')) {
    // An X-Cashu payer gets its change in the header, after the whole stream, unless it asks for it live.
    if (billed.payer.payment === 'x-cashu' && !wantsLiveStream(request)) {
      return sendWholeStream(billed, response.statusCode, response.headers, response.body);
    }
    return sendBilledStream(billed, response.statusCode, response.headers, response.body);
  }
  return sendBilledJson(billed, response.statusCode, response.headers, response.body);
}

/** The body with another model id (a provider that names the model otherwise, ../common/providers.ts). */
function withModel(body: Buffer, id: string): Buffer {
  return Buffer.from(JSON.stringify({ ...JSON.parse(body.toString('utf8')), model: id }));
}
