// Keysets (NUT-01/02) and the mint's half of BDHKE (NUT-00) with DLEQ proofs (NUT-12),
// built on the primitives @cashu/cashu-ts exports for mints.
import { createHash, randomBytes } from 'node:crypto';
import {
  createBlindSignature,
  createDLEQProof,
  createNewMintKeys,
  hashToCurve,
  pointFromHex,
  verifyUnblindedSignature,
} from '@cashu/cashu-ts';

export type Unit = 'sat' | 'msat';
export const UNITS: readonly Unit[] = ['sat', 'msat'];

/** Amounts 1, 2, 4 … 2^30: one key per power of two. */
export const KEY_COUNT = 31;

export interface Keyset {
  id: string;
  unit: Unit;
  active: boolean;
  inputFeePpk: number;
  /** amount → compressed public key (hex), the NUT-01 `keys` object. */
  keys: Record<string, string>;
  privateKeys: Map<number, Uint8Array>;
}

export interface BlindSignature {
  id: string;
  amount: number;
  C_: string;
  dleq: { e: string; s: string };
}

export interface ProofInput {
  id: string;
  amount: number;
  secret: string;
  C: string;
}

/**
 * A keyset whose keys derive from `seed` (so a restarted dev mint keeps its keysets) or are
 * random without one. `generation` tells rotated keysets of the same seed apart.
 */
export function createKeyset(options: { unit: Unit; inputFeePpk: number; seed?: string; generation?: number }): Keyset {
  const { unit, inputFeePpk, seed, generation = 0 } = options;
  const master = seed === undefined
    ? randomBytes(32)
    : createHash('sha256').update(`quartet-devmint|${seed}|${unit}|${generation}`).digest();
  const pair = createNewMintKeys(KEY_COUNT, master, { unit, input_fee_ppk: inputFeePpk });
  const keys: Record<string, string> = {};
  const privateKeys = new Map<number, Uint8Array>();
  for (const [amount, publicKey] of Object.entries(pair.pubKeys)) {
    keys[amount] = Buffer.from(publicKey).toString('hex');
    privateKeys.set(Number(amount), pair.privKeys[amount]);
  }
  return { id: pair.keysetId, unit, active: true, inputFeePpk, keys, privateKeys };
}

/** Parses a compressed SEC1 point; undefined when the hex is not a point on the curve. */
export function parsePoint(hex: string) {
  if (!/^0[23][0-9a-fA-F]{64}$/.test(hex)) return undefined;
  try {
    return pointFromHex(hex);
  } catch {
    return undefined;
  }
}

/** Y = hash_to_curve(secret), the proof's identity for spent-tracking and NUT-07. */
export function proofY(secret: string): string {
  return hashToCurve(new TextEncoder().encode(secret)).toHex(true);
}

/** C_ = k·B_ with a DLEQ proof that the same k stands behind the published key. */
export function signBlinded(keyset: Keyset, amount: number, blinded: string): BlindSignature {
  const key = keyset.privateKeys.get(amount);
  const point = parsePoint(blinded);
  if (!key || !point) throw new Error('signBlinded: outputs must be checked before signing');
  const signature = createBlindSignature(point, key, keyset.id);
  const dleq = createDLEQProof(point, key);
  return {
    id: keyset.id,
    amount,
    C_: signature.C_.toHex(true),
    dleq: { e: Buffer.from(dleq.e).toString('hex'), s: Buffer.from(dleq.s).toString('hex') },
  };
}

/** k·hash_to_curve(secret) == C for the key of the proof's amount. */
export function verifyProof(keyset: Keyset, proof: ProofInput): boolean {
  const key = keyset.privateKeys.get(proof.amount);
  const C = parsePoint(proof.C);
  if (!key || !C) return false;
  return verifyUnblindedSignature({ C, secret: new TextEncoder().encode(proof.secret), id: keyset.id }, key);
}
