// A billed request's exchange in progress (its caller, meter, price, reservation and payer, with
// the node's parts in forward-deps.ts). Settling an exchange turns the upstream's usage into a
// charge (docs/proxy-billing.md).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { databaseOutage } from '../../db/errors.js';
import type { HttpError } from '../../http/errors.js';
import type { Reservation, Settlement } from '../billing/billing.js';
import { type ChangeFields, setChangeHeader, withChange } from '../wallet/change.js';
import { type HeaderList, setHeaderList } from '../common/header-list.js';
import { type CallerConnection, COST_HEADERS, ROUTSTR_COST_HEADERS, ROUTSTR_REQUEST_ID_HEADER } from './forward.js';
import { billedUsage, type MeteredRequest, type ReportedUsage, type Usage } from '../billing/metering.js';
import type { Payer } from './payer.js';
import { costOf, type Cost, type Fraction, type Model, type Price, usdOf } from '../billing/pricing.js';
import type { ForwardDeps } from './forward-deps.js';

/** A billed request whose reservation is held. */
export interface BilledExchange {
  deps: ForwardDeps;
  request: FastifyRequest;
  reply: FastifyReply;
  /** Its leaving before the answer's first byte cancels the upstream request (nothing billed). */
  caller: CallerConnection;
  metered: MeteredRequest;
  model: Model;
  price: Price;
  /** The BTC/USD rate `price` was computed at: the charge is stated in USD at it. */
  btcUsd: Fraction;
  reservation: Reservation;
  /** The most it may be charged (ReservationPlan.ceilingMsat). */
  ceilingMsat: number;
  payer: Payer;
  roundToSat: boolean;
}

export interface Settled {
  cost: Cost;
  charged: number;
  /** The charge in US dollars at the rate of the price. */
  chargedUsd: number;
}

/** Settles from the upstream's usage, its missing or unreadable counts estimated (see billedUsage). */
export async function settle(
  billed: BilledExchange,
  reported: ReportedUsage | null,
  estimate: () => Usage,
  upstreamStatus: number,
): Promise<Settled> {
  const settlement = settlementOf(billed, reported, estimate, upstreamStatus);
  const charged = await billed.deps.billing.settle(billed.reservation, settlement);
  return { cost: settlement.cost, charged, chargedUsd: usdOf(charged, billed.btcUsd) };
}

/**
 * Settles an answer the caller has (part of) already, a stream's: while the database is away, it
 * is settled once the database is back (null now), so the caller keeps the rest of its answer.
 */
export async function settleDelivered(
  billed: BilledExchange,
  reported: ReportedUsage | null,
  estimate: () => Usage,
  upstreamStatus: number,
): Promise<Settled | null> {
  const settlement = settlementOf(billed, reported, estimate, upstreamStatus);
  try {
    const charged = await billed.deps.billing.settle(billed.reservation, settlement);
    return { cost: settlement.cost, charged, chargedUsd: usdOf(charged, billed.btcUsd) };
  } catch (error) {
    if (!databaseOutage(error)) throw error;
    billed.deps.billing.settleWhenBack(billed.reservation, settlement, error);
    return null;
  }
}

function settlementOf(
  billed: BilledExchange,
  reported: ReportedUsage | null,
  estimate: () => Usage,
  upstreamStatus: number,
): Settlement {
  const { usage, source: usageSource } = billedUsage(reported, estimate);
  if (reported && usageSource === 'estimate') {
    billed.request.log.warn({ reported }, 'the upstream reported unreadable usage; the missing counts are estimated');
  }
  const cost = costOf(billed.price, usage.promptTokens, usage.completionTokens, {
    read: usage.cacheReadTokens,
    write: usage.cacheWriteTokens,
  });
  return {
    cost,
    usage,
    usageSource,
    upstreamStatus,
    roundToSat: billed.roundToSat,
    ceilingMsat: billed.ceilingMsat,
  };
}

/** Quartet's cost headers and, beside them, Routstr's (what its clients read), as a list. */
export function costHeaderList(requestId: string, { cost, charged, chargedUsd }: Settled): HeaderList {
  const [total, input, output] = [String(charged), String(cost.inputMsat), String(cost.outputMsat)];
  return [
    ROUTSTR_REQUEST_ID_HEADER,
    requestId,
    COST_HEADERS.total,
    total,
    COST_HEADERS.input,
    input,
    COST_HEADERS.output,
    output,
    COST_HEADERS.request,
    String(cost.requestMsat),
    ROUTSTR_COST_HEADERS.total,
    total,
    ROUTSTR_COST_HEADERS.input,
    input,
    ROUTSTR_COST_HEADERS.output,
    output,
    ROUTSTR_COST_HEADERS.usd,
    String(chargedUsd),
  ];
}

/** The cost headers (see costHeaderList) on a reply Fastify sends. */
export function setCostHeaders(reply: FastifyReply, settled: Settled) {
  setHeaderList(reply, costHeaderList(reply.request.id, settled));
}

/*
 * The X-Cashu change goes only to a caller still there: for one who has left it stays with the
 * token's account (the same token finds it again, or refunds it at POST /v1/wallet/refund) rather
 * than being swapped into a token nobody receives.
 */

/** An error answer, with the change of an X-Cashu payment (see above). */
export async function errorWithChange(billed: BilledExchange, error: HttpError): Promise<HttpError> {
  return billed.caller.gone ? error : withChange(billed, error);
}

/** What a payment by key gets: no change (one object for all: read, never written). */
const NO_CHANGE: Readonly<Omit<ChangeFields, 'change'>> = Object.freeze({});

/**
 * The change of an X-Cashu payment in its header (see above); returns the fields left for the body.
 * A payment by key has none: answered without the wallet's promise chain (every billed answer asks).
 */
export function changeHeaderFor(
  billed: BilledExchange,
): Readonly<Omit<ChangeFields, 'change'>> | Promise<Omit<ChangeFields, 'change'>> {
  return billed.caller.gone || billed.payer.payment !== 'x-cashu' ? NO_CHANGE : setChangeHeader(billed.reply, billed);
}
