// NUT-07: the state of proofs, asked by their Y.
// https://github.com/cashubtc/nuts/blob/main/07.md
import { CheckStateEnum } from '@cashu/cashu-ts';

/** UNSPENT, PENDING or SPENT. */
export type ProofState = CheckStateEnum;
/** One entry of the answer: the proof's Y, its state and its witness. */
export type { ProofState as ProofStateEntry } from '@cashu/cashu-ts';

export interface CheckStateRequest {
  Ys: string[];
}

const STATES: readonly unknown[] = Object.values(CheckStateEnum);

export function isProofState(value: unknown): value is ProofState {
  return STATES.includes(value);
}
