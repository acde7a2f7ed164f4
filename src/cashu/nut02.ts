// NUT-02: keysets, their ids and input fees.
// https://github.com/cashubtc/nuts/blob/main/02.md
import { Keyset } from '@cashu/cashu-ts';
import type { Keys } from './nut01.js';

/** One entry of GET /v1/keysets (and, with `keys`, of GET /v1/keys). */
export interface KeysetEntry {
  id: string;
  unit: string;
  active: boolean;
  input_fee_ppk: number;
  final_expiry: number | null;
}

/** The fee of spending inputs of these keysets (one id per input), rounded up to a whole unit. */
export function inputFee(keysetIds: string[], keysets: readonly { id: string; inputFeePpk: number }[]): number {
  let ppk = 0;
  for (const id of keysetIds) ppk += keysets.find((k) => k.id === id)?.inputFeePpk ?? 0;
  return Math.ceil(ppk / 1000);
}

/** Whether `id` is the id of these keys; v2 ids also commit to the unit, the input fee and the final expiry. */
export function keysetIdMatches(
  id: string,
  keyset: { unit: string; keys: Keys; inputFeePpk: number; finalExpiry: number | null },
): boolean {
  try {
    return Keyset.verifyKeysetId({
      id,
      unit: keyset.unit,
      keys: keyset.keys,
      input_fee_ppk: keyset.inputFeePpk,
      final_expiry: keyset.finalExpiry ?? undefined,
    });
  } catch {
    return false;
  }
}
