// NUT-03 swap: spend proofs, sign the same value (minus NUT-02 input fees) as new outputs.
import type { SwapRequest, SwapResponse } from '../cashu/index.js';
import { Codes, MintError } from './errors.js';
import type { Ledger } from './ledger.js';

export function swap(ledger: Ledger, { inputs, outputs }: SwapRequest): SwapResponse {
  const spent = ledger.checkInputs(inputs);
  if (outputs.length === 0) throw new MintError(Codes.generic, 'no outputs provided');
  const made = ledger.checkOutputs(outputs);
  if (made.unit !== spent.unit) throw new MintError(Codes.unitMismatch, 'inputs and outputs are not of the same unit');
  if (spent.total - spent.fee !== made.total) {
    throw new MintError(
      Codes.transactionUnbalanced,
      `transaction is not balanced: inputs ${spent.total} - fees ${spent.fee} != outputs ${made.total}`,
    );
  }
  // No await between the checks above and these two lines: the swap is all or nothing.
  ledger.spend(spent.ys);
  return { signatures: ledger.sign(outputs) };
}
