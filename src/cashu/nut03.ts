// NUT-03: swap, proofs in for blind signatures on new outputs of the same value (minus NUT-02 fees).
// https://github.com/cashubtc/nuts/blob/main/03.md
import type { BlindedMessage, BlindSignature, WireProof } from './nut00.js';

export interface SwapRequest {
  inputs: WireProof[];
  outputs: BlindedMessage[];
}

export interface SwapResponse {
  signatures: BlindSignature[];
}
