// Holding a billed request's price from its payer's balance before it goes upstream: the plan
// (how much to hold, and the max_tokens that fits it) is made from the balance as the billing
// transaction reads it under its lock, so no concurrent request can take it in between.
import type { FastifyRequest } from 'fastify';
import { HttpError } from '../../http/errors.js';
import type { ForwardDeps } from './forward-deps.js';
import type { Reservation } from '../billing/billing.js';
import type { ReserveRequest } from '../billing/steps.js';
import { withChange } from '../wallet/change.js';
import type { CancelSignal } from './cancel-signal.js';
import { upstreamFailure } from './forward.js';
import type { ReservationPlan, ReservationPlanning } from '../billing/metering.js';
import { keyRefused, spentCredential } from '../keys/accounts.js';
import { balanceLimitExceeded } from '../keys/child-keys.js';
import { insufficientBalance, type Payer } from './payer.js';

/** How long, in all, a refused reservation waits for its account's requests in flight to finish. */
const RESERVATION_WAIT_MS = 2000;

export interface ReservationWanted {
  request: FastifyRequest;
  path: string;
  payer: Payer;
  /** The model as the ledger records it ('' for a flat-priced request). */
  modelId: string;
  stream: boolean;
  /** The plan for what is available (0: the 402's figures); see planReservation. */
  planning(availableMsat: number): ReservationPlanning;
  /** Aborted when the caller leaves: a refused reservation is then not tried again. */
  signal?: CancelSignal;
}

/** The planning of a request with one fixed price. */
export function flatPlanning(priceMsat: number): (availableMsat: number) => ReservationPlanning {
  return (available) => ({
    plan:
      priceMsat <= available
        ? { reserveMsat: priceMsat, ceilingMsat: priceMsat, maxTokens: null, clamped: false }
        : null,
    fullMsat: priceMsat,
    minimumMsat: priceMsat,
  });
}

/**
 * Reserves the request's price, or throws: 401 when the payer's account is gone, 402 (with an
 * X-Cashu payment's change) when its balance cannot cover the request.
 */
export async function reserve(
  deps: ForwardDeps,
  wanted: ReservationWanted,
): Promise<{ reservation: Reservation; plan: ReservationPlan }> {
  const { billing } = deps;
  const { request, payer } = wanted;
  const roundToSat = payer.payment === 'x-cashu';
  let plan: ReservationPlan | null = null;
  const reserveRequest: ReserveRequest = {
    accountId: payer.accountId,
    amountFor(available) {
      plan = wanted.planning(available).plan;
      if (plan && roundToSat) {
        plan = { ...plan, reserveMsat: Math.min(Math.ceil(plan.reserveMsat / 1000) * 1000, available) };
      }
      return plan ? plan.reserveMsat : null;
    },
    requestId: request.id,
    path: wanted.path,
    model: wanted.modelId,
    stream: wanted.stream,
    payment: payer.payment,
    childKeyId: payer.childKeyId,
  };
  let { reservation, availableMsat, limitMsat, refusal } = await billing.reserve(reserveRequest);
  // Refused while this account's other requests here hold reservations: they usually settle
  // below what they held (a small balance is held whole by one lowered request at a time), so
  // wait for them and try again, as long as some are in flight, for up to RESERVATION_WAIT_MS.
  const deadline = Date.now() + RESERVATION_WAIT_MS;
  const left = () => wanted.signal?.aborted === true;
  while (!reservation && availableMsat !== null && !refusal && !left() && Date.now() < deadline) {
    if (!(await billing.freed(payer.accountId, deadline - Date.now())) || left()) break;
    ({ reservation, availableMsat, limitMsat, refusal } = await billing.reserve(reserveRequest));
  }
  if (refusal) {
    deps.authenticator.forget(payer.keyHash);
    throw keyRefused(refusal);
  }
  if (availableMsat === null) {
    deps.authenticator.forget(payer.keyHash);
    throw new HttpError(401, 'Unknown account', { code: 'invalid_api_key' });
  }
  if (!reservation || !plan) {
    // A caller who left gets no 402: an X-Cashu payment's change stays with its token's account.
    if (left()) throw upstreamFailure(wanted.signal!.reason);
    const planned = wanted.planning(0);
    if (limitMsat !== null && limitMsat < availableMsat) throw balanceLimitExceeded(planned, limitMsat);
    // An X-Cashu token sent again after it paid here (its change went back with its answer) is a spent
    // token as a credential: Routstr's SDK drops it on that 401, where a 402 would have it try again.
    if (payer.payment === 'x-cashu' && availableMsat <= 0) throw spentCredential();
    throw await withChange({ deps, payer, request }, insufficientBalance(planned, availableMsat, payer.payment));
  }
  return { reservation, plan };
}
