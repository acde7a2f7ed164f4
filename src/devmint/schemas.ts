// TypeBox schemas of the NUT and dev request bodies: they validate requests and type the handlers
// (`withTypeProvider<TypeBoxTypeProvider>()`). Unknown fields pass, as a mint ignores them.
import { Type } from '@sinclair/typebox';
import { COMPRESSED_POINT } from '../cashu/index.js';
import { MAX_AMOUNT } from './quotes.js';

const KeysetId = Type.String({ maxLength: 200 });

// --- NUT-00 models --------------------------------------------------------------------------

const Proof = Type.Object({
  amount: Type.Integer({ minimum: 0 }),
  id: KeysetId,
  secret: Type.String({ maxLength: 10_000 }),
  C: Type.String({ maxLength: 200 }),
  witness: Type.Optional(Type.Unknown()),
  dleq: Type.Optional(Type.Unknown()),
});
const BlindedMessage = Type.Object({
  amount: Type.Integer({ minimum: 0 }),
  id: KeysetId,
  B_: Type.String({ maxLength: 200 }),
});
const Proofs = Type.Array(Proof);
const Outputs = Type.Array(BlindedMessage);

export const IdParams = Type.Object({ id: Type.String({ maxLength: 200 }) });

// --- NUT routes (/v1) -----------------------------------------------------------------------

export const SwapBody = Type.Object({ inputs: Proofs, outputs: Outputs });
export const MintQuoteBody = Type.Object({
  amount: Type.Integer(),
  unit: Type.String(),
  description: Type.Optional(Type.String()),
  pubkey: Type.Optional(Type.String()),
});
export const MintBody = Type.Object({ quote: Type.String(), outputs: Outputs });
export const MeltQuoteBody = Type.Object({
  request: Type.String({ maxLength: 10_000 }),
  unit: Type.String(),
  options: Type.Optional(Type.Object({ amountless: Type.Optional(Type.Unknown()) })),
});
export const MeltBody = Type.Object({
  quote: Type.String(),
  inputs: Proofs,
  outputs: Type.Optional(Outputs),
  prefer_async: Type.Optional(Type.Boolean()),
});
export const RestoreBody = Type.Object({ outputs: Outputs });
export const CheckStateBody = Type.Object({
  Ys: Type.Array(Type.String({ pattern: COMPRESSED_POINT.source }), { maxItems: 10_000 }),
});

// --- dev routes (/dev) ----------------------------------------------------------------------

export const FaultsBody = Type.Object({
  down: Type.Optional(Type.Boolean()),
  delayMs: Type.Optional(Type.Integer({ minimum: 0 })),
  failSwaps: Type.Optional(Type.Boolean()),
  holdSwaps: Type.Optional(Type.Boolean()),
  dropSwaps: Type.Optional(Type.Boolean()),
  loseSwapResponses: Type.Optional(Type.Boolean()),
  lie: Type.Optional(Type.Boolean()),
  noRestore: Type.Optional(Type.Boolean()),
  refuseMelts: Type.Optional(Type.Integer({ minimum: 0 })),
  loseMeltResponses: Type.Optional(Type.Boolean()),
  loseMintResponses: Type.Optional(Type.Boolean()),
  forMs: Type.Optional(Type.Integer({ minimum: 1 })),
});
export const ReleaseBody = Type.Object({ drop: Type.Optional(Type.Boolean()) });
export const FailNextBody = Type.Object({ detail: Type.Optional(Type.String()) });
export const InvoiceBody = Type.Object({ amount: Type.Integer({ minimum: 1 }) });
export const TokenBody = Type.Object({ amount: Type.Integer({ minimum: 1, maximum: MAX_AMOUNT }) });
export const RotateBody = Type.Object({ input_fee_ppk: Type.Optional(Type.Integer({ minimum: 0 })) });
