// NUT-04 (bolt11 per NUT-23): minting, a quote paid by a Lightning invoice, then its amount signed once.
// https://github.com/cashubtc/nuts/blob/main/04.md
export type MintQuoteState = 'UNPAID' | 'PAID' | 'ISSUED';

export interface MintQuoteRequest {
  amount: number;
  unit: string;
  description?: string;
  pubkey?: string;
}

export interface MintQuoteResponse {
  quote: string;
  request: string;
  amount: number;
  unit: string;
  state: MintQuoteState;
  expiry: number;
}
