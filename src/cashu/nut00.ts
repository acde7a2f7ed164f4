// NUT-00: proofs, blinded messages and blind signatures as they travel, and a proof's Y.
// https://github.com/cashubtc/nuts/blob/main/00.md
import { hashToCurve } from '@cashu/cashu-ts';
import type { Dleq } from './nut12.js';

/** A compressed secp256k1 point in hex: how keys, B_, C_, C and Y travel. */
export const COMPRESSED_POINT = /^0[23][0-9a-fA-F]{64}$/;

/**
 * A proof as it travels and as the proxy node's journal keeps it. Amounts are plain integers:
 * cashu-ts 4 wraps them in its `Amount` class, which JSON and the database do not carry.
 */
export interface WireProof {
  id: string;
  amount: number;
  secret: string;
  C: string;
  witness?: unknown;
}

export interface BlindedMessage {
  amount: number;
  id: string;
  B_: string;
}

export interface BlindSignature {
  amount: number;
  id: string;
  C_: string;
  dleq?: Dleq;
}

/** Y = hash_to_curve(secret), compressed hex: the mint's name for a proof (spent-tracking, NUT-07). */
export function proofY(secret: string): string {
  return hashToCurve(new TextEncoder().encode(secret)).toHex(true);
}
