// The steps billing.ts hands its shared transactions and what store.ts answers: their own module,
// so that the store and the domain above it both see them without importing each other.
import type { Usage } from './metering.js';
import type { Cost } from './pricing.js';

export interface ReserveRequest {
  accountId: number;
  /**
   * The amount to hold, given what the account has available under the transaction's lock; null
   * (or more than is available) refuses the reservation. May be called more than once per attempt
   * (on PostgreSQL first for a balance that affords anything, store.ts applyBillingStepsAtOnce), the
   * last call being the one that counts.
   */
  amountFor(availableMsat: number): number | null;
  requestId: string;
  path: string;
  model: string;
  stream: boolean;
  payment: 'key' | 'x-cashu';
  /** A child key paying from the account: its limit and validity are checked under the same lock. */
  childKeyId?: number | null;
}

/** Why a reservation was refused other than for lack of money: the key may no longer spend. */
export type KeyRefusal = 'expired' | 'revoked';

/** One step of a shared transaction. */
export type BillingStep = (
  | { kind: 'reserve'; request: ReserveRequest }
  | {
      kind: 'settle';
      id: number;
      /** What the request cost (X-Cashu: rounded up to a sat); charged in full where the balance allows. */
      wanted: number;
      /** What its reservation holds. */
      reservedMsat: number;
      cost: Cost;
      usage: Usage;
      usageSource: string;
      upstreamStatus: number;
      childKeyId: number | null;
      /** The provider that answered (usage analytics). */
      provider: string | null;
    }
  | {
      kind: 'finish';
      id: number;
      status: 'released' | 'expired';
      reason: string;
      upstreamStatus: number | null;
      staleBefore?: number;
      childKeyId: number | null;
      provider: string | null;
    }
) & {
  /** The account whose row the step changes. */
  accountId: number;
  /** When the step was asked for. */
  now: number;
};

/** What a reserve step answers: the held reservation's id (null: refused) and what was available. */
export interface HeldResult {
  id: number | null;
  amountMsat: number;
  /** Null: no such account. */
  availableMsat: number | null;
  /** What a child key's limit left to spend (null: no child key, or no limit). */
  limitMsat: number | null;
  refusal: KeyRefusal | null;
}
