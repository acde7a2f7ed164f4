// NUT-09: restore, the signatures a mint gave earlier on these outputs.
// https://github.com/cashubtc/nuts/blob/main/09.md
import type { BlindedMessage, BlindSignature } from './nut00.js';

export interface RestoreRequest {
  outputs: BlindedMessage[];
}

/** The outputs the mint had signed, in the order asked, each with its signature at the same index. */
export interface RestoreResponse {
  outputs: BlindedMessage[];
  signatures: BlindSignature[];
}
