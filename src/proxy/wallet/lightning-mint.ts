// The node's client of a mint's Lightning side: NUT-04 mint quotes and minting, NUT-05 melt
// quotes and melting (bolt11, NUT-23), with NUT-08 change. Every answer is checked before use;
// failures are MintClient's classified errors (./mint-client.ts).
import { Amount, type OutputData, type Proof } from '@cashu/cashu-ts';
import type { BlindedMessage, BlindSignature, MeltQuoteState, MintQuoteState, WireProof } from '../../cashu/index.js';
import { field, MintProtocolError, type KeysetWithKeys, type MintClient } from './mint-client.js';

export interface MintQuote {
  quote: string;
  request: string;
  amount: number;
  state: MintQuoteState;
  /** Unix seconds; null when the mint gives none. */
  expiry: number | null;
}

export interface MeltQuote {
  quote: string;
  amount: number;
  feeReserve: number;
  state: MeltQuoteState;
  preimage: string | null;
  /** NUT-08: signatures on the first blank outputs, in their order. */
  change: BlindSignature[];
}

const MINT_STATES = new Set(['UNPAID', 'PAID', 'ISSUED']);
const MELT_STATES = new Set(['UNPAID', 'PENDING', 'PAID']);
/** Quote ids go into a URL path: the mint's own alphabet is wider, but never needs more than this. */
const QUOTE_ID = /^[A-Za-z0-9_-]{1,128}$/;

export async function requestMintQuote(client: MintClient, amount: number, unit: string): Promise<MintQuote> {
  return readMintQuote(client, await client.request('POST', '/v1/mint/quote/bolt11', { amount, unit }));
}

export async function mintQuoteState(client: MintClient, quote: string): Promise<MintQuote> {
  return readMintQuote(client, await client.request('GET', `/v1/mint/quote/bolt11/${quotePath(client, quote)}`));
}

/** NUT-04: the paid quote's amount, signed on our outputs. */
export async function mintProofs(
  client: MintClient,
  quote: string,
  outputs: BlindedMessage[],
): Promise<BlindSignature[]> {
  const body = await client.request('POST', '/v1/mint/bolt11', { quote, outputs });
  return client.signatures(field(body, 'signatures'), outputs.length);
}

export async function requestMeltQuote(client: MintClient, bolt11: string, unit: string): Promise<MeltQuote> {
  return readMeltQuote(client, await client.request('POST', '/v1/melt/quote/bolt11', { request: bolt11, unit }));
}

export async function meltQuoteState(client: MintClient, quote: string): Promise<MeltQuote> {
  return readMeltQuote(client, await client.request('GET', `/v1/melt/quote/bolt11/${quotePath(client, quote)}`));
}

/** NUT-05: pays the quote's invoice with the inputs; blank outputs receive the unused fee reserve. */
export async function meltProofs(
  client: MintClient,
  quote: string,
  inputs: WireProof[],
  outputs: BlindedMessage[],
): Promise<MeltQuote> {
  return readMeltQuote(client, await client.request('POST', '/v1/melt/bolt11', { quote, inputs, outputs }));
}

function quotePath(client: MintClient, quote: string): string {
  if (!QUOTE_ID.test(quote)) throw new MintProtocolError(client.url, 'malformed quote id');
  return quote;
}

function readMintQuote(client: MintClient, body: unknown): MintQuote {
  const quote = field(body, 'quote');
  const request = field(body, 'request');
  const amount = field(body, 'amount');
  const state = field(body, 'state');
  const expiry = field(body, 'expiry') ?? null;
  if (
    typeof quote !== 'string' ||
    !QUOTE_ID.test(quote) ||
    typeof request !== 'string' ||
    request.length === 0 ||
    request.length > 8000 ||
    !Number.isSafeInteger(amount) ||
    typeof state !== 'string' ||
    !MINT_STATES.has(state) ||
    (expiry !== null && !Number.isSafeInteger(expiry))
  ) {
    throw new MintProtocolError(client.url, 'malformed mint quote');
  }
  return { quote, request, amount: amount as number, state: state as MintQuoteState, expiry: expiry as number | null };
}

function readMeltQuote(client: MintClient, body: unknown): MeltQuote {
  const quote = field(body, 'quote');
  const amount = field(body, 'amount');
  const feeReserve = field(body, 'fee_reserve');
  const state = field(body, 'state');
  const preimage = field(body, 'payment_preimage') ?? null;
  const change = field(body, 'change') ?? [];
  if (
    typeof quote !== 'string' ||
    !QUOTE_ID.test(quote) ||
    !Number.isSafeInteger(amount) ||
    !Number.isSafeInteger(feeReserve) ||
    (feeReserve as number) < 0 ||
    typeof state !== 'string' ||
    !MELT_STATES.has(state) ||
    (preimage !== null && typeof preimage !== 'string') ||
    !Array.isArray(change)
  ) {
    throw new MintProtocolError(client.url, 'malformed melt quote');
  }
  return {
    quote,
    amount: amount as number,
    feeReserve: feeReserve as number,
    state: state as MeltQuoteState,
    preimage: preimage as string | null,
    change: client.signatures(change, change.length),
  };
}

/** Unblinds the mint's signatures on our outputs, each checked against its output (and its DLEQ). */
export function unblind(
  outputs: OutputData[],
  signatures: BlindSignature[],
  keyset: KeysetWithKeys,
  mintUrl: string,
  { blank = false } = {},
): Proof[] {
  return signatures.map((sig, i) => {
    const output = outputs[i];
    // Blank outputs (NUT-08 change) get their amounts from the mint.
    if (sig.id !== keyset.id || (!blank && sig.amount !== Number(output.blindedMessage.amount.toString()))) {
      throw new MintProtocolError(mintUrl, 'a signature does not match its output');
    }
    return output.toProof(
      { id: sig.id, amount: Amount.from(sig.amount), C_: sig.C_, ...(sig.dleq ? { dleq: sig.dleq } : {}) },
      { id: keyset.id, keys: keyset.keys },
    );
  });
}
