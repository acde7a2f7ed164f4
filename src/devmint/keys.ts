// Keysets (NUT-01/02) and the mint's half of BDHKE (NUT-00) with DLEQ proofs (NUT-12),
// built on the primitives @cashu/cashu-ts exports for mints.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import {
  createBlindSignature,
  createDLEQProof,
  deriveKeysetId,
  getPubKeyFromPrivKey,
  pointFromHex,
  verifyUnblindedSignature,
} from '@cashu/cashu-ts';
import { COMPRESSED_POINT, type BlindSignature, type Keys, type Unit, type WireProof } from '../cashu/index.js';

/** Amounts 1, 2, 4 … 2^30: one key per power of two. */
export const KEY_COUNT = 31;

export interface Keyset {
  id: string;
  unit: Unit;
  active: boolean;
  inputFeePpk: number;
  /** amount → compressed public key (hex), the NUT-01 `keys` object. */
  keys: Keys;
  privateKeys: Map<number, Uint8Array>;
}

/** secp256k1 group order: private keys are scalars in [1, n − 1]. */
const CURVE_ORDER = BigInt('0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141');

/**
 * A keyset whose keys derive from `seed` (so a restarted dev mint keeps its keysets) or from
 * random bytes without one. `generation` tells rotated keysets of the same seed apart. Each
 * amount's key is HMAC-SHA256(master, amount), far cheaper than a BIP-32 path per amount.
 */
export function createKeyset(options: { unit: Unit; inputFeePpk: number; seed?: string; generation?: number }): Keyset {
  const { unit, inputFeePpk, seed, generation = 0 } = options;
  const master =
    seed === undefined
      ? randomBytes(32)
      : createHash('sha256').update(`quartet-devmint|${seed}|${unit}|${generation}`).digest();
  const keys: Keys = {};
  const privateKeys = new Map<number, Uint8Array>();
  for (let i = 0; i < KEY_COUNT; i++) {
    const amount = 2 ** i;
    const privateKey = scalar(master, String(amount));
    privateKeys.set(amount, privateKey);
    keys[String(amount)] = Buffer.from(getPubKeyFromPrivKey(privateKey)).toString('hex');
  }
  const id = deriveKeysetId(keys, { unit, input_fee_ppk: inputFeePpk });
  return { id, unit, active: true, inputFeePpk, keys, privateKeys };
}

/** A private key from HMAC output, re-hashed in the (astronomically rare) case it is out of range. */
function scalar(master: Uint8Array, label: string): Uint8Array {
  for (let counter = 0; ; counter++) {
    const bytes = createHmac('sha256', master).update(`${label}|${counter}`).digest();
    const value = BigInt(`0x${bytes.toString('hex')}`);
    if (value > 0n && value < CURVE_ORDER) return new Uint8Array(bytes);
  }
}

/** Parses a compressed SEC1 point; undefined when the hex is not a point on the curve. */
export function parsePoint(hex: string) {
  if (!COMPRESSED_POINT.test(hex)) return undefined;
  try {
    return pointFromHex(hex);
  } catch {
    return undefined;
  }
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
export function verifyProof(keyset: Keyset, proof: WireProof): boolean {
  const key = keyset.privateKeys.get(proof.amount);
  const C = parsePoint(proof.C);
  if (!key || !C) return false;
  return verifyUnblindedSignature({ C, secret: new TextEncoder().encode(proof.secret), id: keyset.id }, key);
}
