// NUT-05 (bolt11 per NUT-23): melting, proofs spent to pay a Lightning invoice, with NUT-08 change.
// https://github.com/cashubtc/nuts/blob/main/05.md
import type { BlindSignature } from './nut00.js';

export type MeltQuoteState = 'UNPAID' | 'PENDING' | 'PAID';

export interface MeltQuoteRequest {
  request: string;
  unit: string;
  options?: { amountless?: unknown };
}

export interface MeltQuoteResponse {
  quote: string;
  request: string;
  amount: number;
  unit: string;
  fee_reserve: number;
  state: MeltQuoteState;
  expiry: number;
  payment_preimage: string | null;
  /** NUT-08: signatures on the blank outputs that carry the overpaid fee reserve back. */
  change?: BlindSignature[];
}
