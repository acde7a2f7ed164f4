// Mint errors as NUT-00 describes them: HTTP 400 with `{"detail": "...", "code": <int>}`.
// Codes from the NUT documents' error_codes.md (as of 2026: 11002 = pending, 11005 = unbalanced).

export const Codes = {
  generic: 0,
  proofVerificationFailed: 10001,
  proofsAlreadySpent: 11001,
  proofsPending: 11002,
  outputsAlreadySigned: 11003,
  outputsPending: 11004,
  transactionUnbalanced: 11005,
  amountOutsideLimit: 11006,
  duplicateInputs: 11007,
  duplicateOutputs: 11008,
  multipleUnits: 11009,
  unitMismatch: 11010,
  amountlessInvoiceUnsupported: 11011,
  unitUnsupported: 11013,
  maxInputsExceeded: 11014,
  maxOutputsExceeded: 11015,
  keysetUnknown: 12001,
  keysetInactive: 12002,
  quoteNotPaid: 20001,
  quoteAlreadyIssued: 20002,
  lightningPaymentFailed: 20004,
  quotePending: 20005,
  invoiceAlreadyPaid: 20006,
  quoteExpired: 20007,
} as const;

export class MintError extends Error {
  constructor(
    readonly code: number,
    readonly detail: string,
    readonly status = 400,
  ) {
    super(detail);
    this.name = 'MintError';
  }

  body() {
    return { detail: this.detail, code: this.code };
  }
}
