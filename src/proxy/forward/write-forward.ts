// Writes on paths without a model price (PUT, POST, DELETE, PATCH: files, images, fine-tuning…):
// forwarded 1:1 as the seed says, streamed both ways, and charged one flat price per request
// (PROXY_WRITE_PRICE_MSAT), so that nothing the upstream does for a caller is free
// (docs/proxy-billing.md). The operator may still refuse them (PROXY_FORWARD_UNBILLED_WRITES=false).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../../http/errors.js';
import { setCostHeaders } from './billed-exchange.js';
import type { ForwardDeps } from './forward-deps.js';
import type { Reservation } from '../billing/billing.js';
import { setChangeHeader, withChange } from '../wallet/change.js';
import {
  type CallerConnection,
  callerResponseHeaders,
  hasRequestBody,
  upstreamFailure,
  upstreamRequestHeaders,
} from './forward.js';
import { identifyPayer, type Payer } from './payer.js';
import { usdOf } from '../billing/pricing.js';
import { flatPlanning, reserve } from './reservation.js';
import { routeOf } from './upstreams.js';

export interface WriteCall {
  request: FastifyRequest;
  reply: FastifyReply;
  caller: CallerConnection;
  /** The normalized path, as the ledger records it. */
  path: string;
  pathAndQuery: string;
}

export async function forwardWrite(deps: ForwardDeps, call: WriteCall) {
  const { config, billing } = deps;
  const { request, path } = call;
  if (!config.forwardUnbilledWrites) {
    throw new HttpError(
      403,
      `${request.method} ${path} has no model price, and this node does not forward such writes ` +
        '(PROXY_FORWARD_UNBILLED_WRITES=false)',
      { code: 'not_forwarded' },
    );
  }
  // The rate is needed to state the charge in USD, as for every billed answer.
  const { btcUsd } = await deps.pricing.currentRate();
  deps.upstream.checkCapacity(routeOf(request, call.path));
  const planning = flatPlanning(config.writePriceMsat);
  const payer = await identifyPayer(deps, request, () => planning(0));
  const { reservation } = await reserve(deps, {
    request,
    path,
    payer,
    modelId: '',
    stream: false,
    planning,
    signal: call.caller.signal,
  });
  return billing.hold(
    serveWrite(deps, call, payer, reservation, btcUsd).finally(() =>
      billing.abandon(reservation, 'the request failed before it was settled'),
    ),
  );
}

async function serveWrite(
  deps: ForwardDeps,
  call: WriteCall,
  payer: Payer,
  reservation: Reservation,
  btcUsd: Parameters<typeof usdOf>[1],
) {
  const { billing, config } = deps;
  const { request, reply } = call;
  const changeFor = { deps, payer, request };
  let response;
  try {
    response = await deps.upstream.request({
      method: request.method,
      pathAndQuery: call.pathAndQuery,
      route: routeOf(request, call.path),
      headers: upstreamRequestHeaders(request.raw.headers),
      body: hasRequestBody(request.raw) ? request.raw : null,
      signal: call.caller.signal,
    });
  } catch (error) {
    await billing.release(reservation, (error as Error).message);
    throw await withChange(changeFor, upstreamFailure(error));
  }
  reservation.provider = response.provider;
  const status = response.statusCode;
  // Charged when the upstream did the work (2xx), as billed paths are; a refusal costs nothing.
  const done = status >= 200 && status < 300;
  const priceMsat = config.writePriceMsat;
  const cost = {
    inputMsat: 0,
    outputMsat: 0,
    requestMsat: done ? priceMsat : 0,
    totalMsat: done ? priceMsat : 0,
  };
  let charged = 0;
  if (done) {
    charged = await billing.settle(reservation, {
      cost,
      usage: { promptTokens: 0, completionTokens: 0 },
      usageSource: 'upstream',
      upstreamStatus: status,
      roundToSat: payer.payment === 'x-cashu',
    });
  } else {
    await billing.release(reservation, `upstream answered ${status}`, status);
  }
  setCostHeaders(reply, { cost, charged, chargedUsd: usdOf(charged, btcUsd) });
  await setChangeHeader(reply, changeFor);
  return reply.code(status).headers(callerResponseHeaders(response.headers)).send(response.body);
}
