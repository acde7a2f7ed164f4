// Reading a Cashu token someone hands the node: decoded with cashu-ts (v3 `cashuA` JSON and
// v4 `cashuB` CBOR), then every field checked, so nothing malformed reaches the mint or the
// journal. Each problem is an HttpError with a precise status, code and message.
import { hash } from 'node:crypto';
import { getDecodedToken, getTokenMetadata } from '@cashu/cashu-ts';
import { COMPRESSED_POINT, inputFee, isUnit, proofY, UNITS, unitToMsat, type WireProof } from '../../cashu/index.js';
import { HttpError } from '../../http/errors.js';
import {
  MintProtocolError,
  MintRejectedError,
  MintUnreachableError,
  normalizeMintUrl,
  type KeysetInfo,
  type MintClient,
} from './mint-client.js';

const MAX_TOKEN_LENGTH = 200_000;
const MAX_PROOFS = 1000;
const TOKEN_SHAPE = /^cashu[AB][A-Za-z0-9_\-+/=]+$/;

/** A decoded proof before its fields are checked. */
interface UncheckedProof {
  id: unknown;
  amount: unknown;
  secret: unknown;
  C: unknown;
  witness?: unknown;
}

export interface ParsedToken {
  mintUrl: string;
  unit: string;
  proofs: WireProof[];
  /** hash_to_curve(secret) of each proof, compressed hex: the mint's name for it (NUT-07). */
  ys: string[];
  /** Sum of the proofs, in the unit. */
  amount: number;
  /** The mint's input fee for spending them (NUT-02), in the unit. */
  fee: number;
  /** sha256 hex of the token string. */
  tokenHash: string;
  /** The mint is not one of PROXY_MINTS: the token is swapped into the primary mint (./foreign.ts). */
  foreign: boolean;
}

/** Which untrusted mints' tokens are swapped in (PROXY_FOREIGN_MINTS), and the face value one may have. */
export interface ForeignPolicy {
  mints: 'any' | 'none' | string[];
  maxMsat: number;
}

/**
 * The `error.type` of each token error's `code`, in Routstr's taxonomy, on which its clients branch
 * (reference/proxy-node.md); the codes Routstr's node has are its own, the others quartet's.
 */
const TOKEN_ERROR_TYPES = new Map<string, string>([
  ['invalid_cashu_token', 'invalid_token'],
  ['unknown_keyset', 'invalid_token'],
  ['invalid_amount', 'invalid_token'],
  ['duplicate_proofs', 'invalid_token'],
  ['cashu_token_already_spent', 'token_already_spent'],
  ['cashu_token_swap_fees_exceed_amount', 'mint_error'],
  ['unsupported_unit', 'invalid_token'],
  ['amount_too_large', 'cashu_error'],
  // Routstr's clients try another of their mints on this one (its `shouldFailoverToAnotherMint`).
  ['cashu_foreign_mint_swap_failed', 'mint_error'],
]);

export type TokenErrorCode =
  | 'invalid_cashu_token'
  | 'unknown_keyset'
  | 'invalid_amount'
  | 'duplicate_proofs'
  | 'cashu_token_already_spent'
  | 'cashu_token_swap_fees_exceed_amount'
  | 'unsupported_unit'
  | 'amount_too_large'
  | 'cashu_foreign_mint_swap_failed';

export function tokenError(code: TokenErrorCode, message: string): HttpError {
  return new HttpError(400, message, { code, type: TOKEN_ERROR_TYPES.get(code) });
}

export function looksLikeToken(value: string): boolean {
  return value.startsWith('cashuA') || value.startsWith('cashuB');
}

export function sha256Hex(text: string): string {
  // The one-shot hash: a third of a Hash object's cost, and every billed request hashes its key.
  return hash('sha256', text, 'hex');
}

/** Turns a mint client failure into the answer a caller of the node gets. */
export function mintFailure(error: unknown, mintUrl: string): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof MintUnreachableError) {
    return new HttpError(503, `The mint ${mintUrl} is unreachable; your token was not used, try again later`, {
      code: 'cashu_mint_unreachable',
      type: 'mint_unreachable',
    });
  }
  if (error instanceof MintRejectedError) {
    return new HttpError(error.status >= 500 ? 502 : 400, `The mint ${mintUrl} refused: ${error.detail}`, {
      code: 'mint_refused',
      type: 'mint_error',
    });
  }
  if (error instanceof MintProtocolError) {
    return new HttpError(502, `The mint ${mintUrl} gave an invalid answer; nothing was credited`, {
      code: 'mint_error',
      type: 'mint_error',
    });
  }
  throw error;
}

/**
 * Decodes and checks a token. `trusted` are the normalized PROXY_MINTS; `clientFor` gives the
 * client of a trusted mint (its keysets are needed to read v4 short keyset ids and the fees).
 */
export async function parseToken(
  raw: string,
  trusted: string[],
  clientFor: (mintUrl: string) => MintClient,
  maxMsat: number,
  foreignPolicy: ForeignPolicy = { mints: 'none', maxMsat: 0 },
): Promise<ParsedToken> {
  const text = raw.trim();
  if (text.length > MAX_TOKEN_LENGTH || !TOKEN_SHAPE.test(text)) {
    throw tokenError('invalid_cashu_token', 'Malformed Cashu token: expected a cashuA… or cashuB… token');
  }
  let meta: { mint: string; unit: string };
  try {
    meta = getTokenMetadata(text);
  } catch {
    throw tokenError('invalid_cashu_token', 'Malformed Cashu token: it cannot be decoded');
  }
  let mintUrl: string;
  try {
    if (typeof meta.mint !== 'string') throw new Error('no mint');
    mintUrl = normalizeMintUrl(meta.mint);
  } catch {
    throw tokenError('invalid_cashu_token', 'Malformed Cashu token: it names no valid mint URL');
  }
  const foreign = !trusted.includes(mintUrl);
  const swapsIn =
    foreignPolicy.mints === 'any' || (Array.isArray(foreignPolicy.mints) && foreignPolicy.mints.includes(mintUrl));
  if (foreign && !swapsIn) {
    throw tokenError(
      'cashu_foreign_mint_swap_failed',
      `Tokens of the mint ${mintUrl.slice(0, 200)} are not accepted here; ` +
        `this node trusts (PROXY_MINTS): ${trusted.join(', ')}`,
    );
  }
  const unit = typeof meta.unit === 'string' ? meta.unit : 'sat';
  if (!isUnit(unit) || (foreign && unit !== 'sat')) {
    // A foreign token is melted to pay a bolt11 invoice of sats.
    const units = foreign ? ['sat'] : UNITS;
    throw tokenError(
      'unsupported_unit',
      `Tokens${foreign ? ' of an untrusted mint' : ''} in unit "${unit.slice(0, 20)}" are not accepted; ` +
        `use ${units.join(' or ')}`,
    );
  }
  if (foreign) maxMsat = Math.min(maxMsat, foreignPolicy.maxMsat);
  const client = clientFor(mintUrl);
  let keysets: KeysetInfo[];
  try {
    keysets = await client.keysets();
  } catch (error) {
    throw mintFailure(error, mintUrl);
  }
  let decoded: { proofs: UncheckedProof[] };
  try {
    decoded = getDecodedToken(
      text,
      keysets.map((k) => k.id),
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : '';
    if (/keyset/i.test(message)) throw tokenError('unknown_keyset', 'The token uses a keyset its mint does not know');
    throw tokenError('invalid_cashu_token', 'Malformed Cashu token: it cannot be decoded');
  }
  const list = decoded.proofs;
  if (!Array.isArray(list) || list.length === 0) throw tokenError('invalid_cashu_token', 'The token holds no proofs');
  if (list.length > MAX_PROOFS) {
    throw tokenError('invalid_cashu_token', `The token holds more than ${MAX_PROOFS} proofs`);
  }
  const proofs: WireProof[] = [];
  const secrets = new Set<string>();
  let amount = 0;
  for (const proof of list) {
    const keyset = keysets.find((k) => k.id === proof.id);
    if (!keyset) throw tokenError('unknown_keyset', 'The token holds a proof of a keyset its mint does not know');
    if (keyset.unit !== unit) {
      throw tokenError(
        'invalid_cashu_token',
        `The token says unit ${unit} but holds proofs of a ${keyset.unit} keyset`,
      );
    }
    const value = amountOf(proof.amount);
    if (value === null) {
      throw tokenError('invalid_amount', 'The token holds a proof whose amount is not a positive power of two');
    }
    if (typeof proof.secret !== 'string' || proof.secret.length === 0 || proof.secret.length > 1024) {
      throw tokenError('invalid_cashu_token', 'The token holds a proof with an invalid secret');
    }
    if (typeof proof.C !== 'string' || !COMPRESSED_POINT.test(proof.C)) {
      throw tokenError('invalid_cashu_token', 'The token holds a proof with an invalid signature');
    }
    if (secrets.has(proof.secret)) throw tokenError('duplicate_proofs', 'The token holds the same proof twice');
    secrets.add(proof.secret);
    amount += value;
    if (!Number.isSafeInteger(amount) || unitToMsat(amount, unit) > maxMsat) {
      throw tokenError(
        'amount_too_large',
        foreign
          ? `A token of an untrusted mint may be worth at most ${maxMsat / 1000} sat here (PROXY_FOREIGN_MAX_SAT)`
          : `The token is worth more than one top-up may credit (${maxMsat} msat)`,
      );
    }
    proofs.push({
      id: keyset.id,
      amount: value,
      secret: proof.secret,
      C: proof.C,
      ...(proof.witness !== undefined ? { witness: proof.witness } : {}),
    });
  }
  let ys: string[];
  try {
    ys = proofs.map((p) => proofY(p.secret));
  } catch {
    throw tokenError('invalid_cashu_token', 'The token holds a proof whose secret cannot be hashed to the curve');
  }
  return {
    mintUrl,
    unit,
    proofs,
    ys,
    amount,
    fee: inputFee(
      proofs.map((p) => p.id),
      keysets,
    ),
    tokenHash: sha256Hex(text),
    foreign,
  };
}

/** A proof amount as a safe positive power of two, else null. */
function amountOf(value: unknown): number | null {
  let big: bigint;
  try {
    if (typeof value === 'number') big = BigInt(value);
    else if (typeof value === 'bigint') big = value;
    else if (value && typeof (value as { toBigInt?: unknown }).toBigInt === 'function') {
      big = (value as { toBigInt(): bigint }).toBigInt();
    } else if (typeof value === 'string' && /^\d+$/.test(value)) big = BigInt(value);
    else return null;
  } catch {
    return null;
  }
  if (big <= 0n || big > BigInt(Number.MAX_SAFE_INTEGER) || (big & (big - 1n)) !== 0n) return null;
  return Number(big);
}
