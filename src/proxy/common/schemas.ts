// TypeBox schemas of the proxy routes: they validate requests and generate /openapi/proxy.json.
import { type TSchema, Type } from '@sinclair/typebox';

export const AuthorizationHeader = Type.Object({
  authorization: Type.String({
    description:
      '`Bearer sk-…` (an API key of this node) or `Bearer cashuA…`/`Bearer cashuB…` (a Cashu token: redeemed once ' +
      'into an account whose key is `sk-` + sha256 of the token)',
  }),
});

export const TopupQuery = Type.Object({
  ecash_token: Type.String({
    description: 'A Cashu token (cashuA… or cashuB…) of a trusted mint, redeemed into the account',
  }),
  cashu_token: Type.Optional(
    Type.String({
      description:
        "Routstr's name for the same token (its clients send it here or in a JSON body): taken when `ecash_token` " +
        'is absent, which is then not required',
    }),
  ),
});

/** Routstr's top-up body; no body at all (validated as null) is as valid. */
export const TopupBody = Type.Union([
  Type.Object({
    cashu_token: Type.Optional(Type.String({ description: 'The token, as Routstr clients send it in a JSON body' })),
  }),
  Type.Null(),
]);

const Msat = (description: string) => Type.Integer({ description: `${description} (millisatoshis)` });

export const NodeInfo = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    version: Type.String(),
    mints: Type.Array(Type.String(), {
      description: 'Trusted mints (PROXY_MINTS); the first receives refunds of balances that mix mints',
    }),
    http_url: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: true, description: 'Node information, with `models` and their pricing' },
);

export const RoutstrInfo = Type.Object({
  name: Type.String(),
  description: Type.String(),
  version: Type.String(),
  npub: Type.Union([Type.String(), Type.Null()], {
    description: "The node's Nostr public key (npub1…, from NOSTR_NSEC); null: it has none",
  }),
  mints: Type.Array(Type.String(), { description: 'Trusted mints (PROXY_MINTS)' }),
  http_url: Type.Union([Type.String(), Type.Null()], { description: 'PROXY_HTTP_URL; null when unset' }),
  onion_url: Type.Union([Type.String(), Type.Null()], { description: 'PROXY_ONION_URL; null when unset' }),
});

const UsdAmount = Type.Union([Type.String(), Type.Number()]);
const Sats = (description: string) => Type.Number({ description: `${description} (sats)` });

export const RoutstrModels = Type.Object({
  data: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      context_length: Type.Union([Type.Integer(), Type.Null()]),
      pricing: Type.Object(
        {
          prompt: UsdAmount,
          completion: UsdAmount,
          request: UsdAmount,
          input_cache_read: Type.Optional(UsdAmount),
          input_cache_write: Type.Optional(UsdAmount),
        },
        { description: 'USD per token (per request for `request`), as in the models file' },
      ),
      sats_pricing: Type.Union([
        Type.Object({
          prompt: Sats('Per prompt token'),
          completion: Sats('Per completion token'),
          request: Sats('Per request'),
          input_cache_read: Type.Optional(Sats('Per input token read from the upstream cache')),
          input_cache_write: Type.Optional(Sats('Per input token written to the upstream cache')),
          max_prompt_cost: Sats('A prompt filling the context length, rounded up'),
          max_completion_cost: Sats("The longest output: the model's limit, else its context length; rounded up"),
          max_cost: Sats('What the node reserves for the largest request, with the request fee; rounded up'),
        }),
        Type.Null(),
      ]),
    }),
  ),
});

export const TopupResult = Type.Object({
  msats: Msat("Credited: the token's value minus the mint's input fee"),
  fee_msats: Msat(
    "The mint's input fee paid to redeem the token; for a token of an untrusted mint, everything the swap into " +
      'the primary mint cost (input fee and melt fees)',
  ),
  balance: Msat('The new balance'),
  foreign_mint: Type.Optional(
    Type.String({
      description: 'Only for a token of a mint this node does not trust: that mint (PROXY_FOREIGN_MINTS)',
    }),
  ),
  swap_fee_msat: Type.Optional(
    Msat("Only for a foreign token: the part of fee_msats the melt cost beyond the foreign mint's input fee"),
  ),
});

export const RefundResult = Type.Object({
  msats: Msat('Taken from the balance for this token'),
  fee_msats: Msat(
    "The mint's input fee on the swap that made the token, taken from it: it is worth msats - fee_msats (0 when " +
      "the node's proofs summing to it were handed over without a swap)",
  ),
  token: Type.String({ description: "A Cashu token (cashuB…) of the account's mint and unit" }),
  mint: Type.String(),
  unit: Type.String(),
  balance: Msat('What remains: reserved amounts, under one unit, or what came in while an older token went out'),
  repeated: Type.Boolean({
    description: 'True when the token was made by an earlier refund call (its answer was lost, or it finished later)',
  }),
  unclaimed: Type.Integer({
    description:
      'Further refund tokens finished but not yet handed out: each refund call hands out one, the oldest first ' +
      '(GET /v1/wallet/refunds lists them all)',
  }),
});

export const RefundsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'At most this many' })),
    before: Type.Optional(Type.Integer({ minimum: 1, description: 'Only refunds older than this id (`next_before`)' })),
  },
  { additionalProperties: false },
);

const RefundEntry = Type.Object({
  id: Type.Integer(),
  state: Type.Union([Type.Literal('pending'), Type.Literal('done')], {
    description: 'done: the token exists; pending: debited, not confirmed by the mint yet (the recovery finishes it)',
  }),
  msats: Msat('Taken from the balance'),
  fee_msats: Type.Union([Type.Integer(), Type.Null()], {
    description: "The mint's input fee taken from the token's amount (millisatoshis); null until the swap is prepared",
  }),
  token: Type.Union([Type.String(), Type.Null()], { description: 'The Cashu token; null while pending' }),
  mint: Type.String(),
  unit: Type.String(),
  created_at: Type.Integer({ description: 'When the refund was asked for, Unix seconds (UTC)' }),
  claimed: Type.Boolean({ description: 'A refund answer has carried this token (always true for Lightning)' }),
  lightning: Type.Union(
    [
      Type.Object({
        recipient: Type.String({ description: 'The Lightning address paid' }),
        amount_msats: Msat("What the recipient's invoice paid: msats - fee_msats"),
      }),
      Type.Null(),
    ],
    {
      description:
        'A refund paid to a Lightning address (POST …/refund with one, or an expired key paid to its Refund-LNURL ' +
        'address): `token` is null and `fee_msats` is the fee reserve held (pending) or the fees paid (done); null ' +
        'for a token',
    },
  ),
});

export const RefundList = Type.Object({
  refunds: Type.Array(RefundEntry, { description: 'Newest first; failed ones (debit given back) are left out' }),
  next_before: Type.Union([Type.Integer(), Type.Null()], { description: '`before` of the next page; null at the end' }),
});

const ErrorObject = Type.Object({
  message: Type.String(),
  type: Type.String({ description: "Routstr's error type, on which its clients branch (docs/proxy-wallet.md)" }),
  code: Type.Union([Type.String(), Type.Null()]),
});

/** OpenAI's error inside Routstr's envelope. */
const OpenAiError = Type.Object({
  error: ErrorObject,
  detail: Type.Union([Type.Object({ error: ErrorObject }), Type.String()], {
    description: 'The same error, for older Routstr clients (a plain string where Routstr sends one)',
  }),
  request_id: Type.String(),
});

const ValidationError = Type.Object(
  {
    detail: Type.Array(
      Type.Object({
        loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
        msg: Type.String(),
        type: Type.String(),
      }),
    ),
  },
  { description: 'HTTPValidationError: a required input is missing or invalid' },
);

/** Documented error answers of a wallet route. */
export function walletErrors(statuses: number[]): Record<string, TSchema> {
  const text: Record<number, string> = {
    400:
      'Token problem: malformed, already spent, untrusted mint, unsupported unit, unknown keyset, amount below the ' +
      'mint fee or too large; or nothing to refund',
    401: 'Authorization malformed (neither form) or unknown API key',
    404: 'Refund by X-Cashu: the token paid for nothing at this node that is left to refund',
    409: 'The same token or refund is being processed by another request; retry',
    422: 'A required input is missing',
    425: 'Refund by X-Cashu: a request the token pays is still running; retry after Retry-After',
    429: 'Too many tokens redeemed from this address (PROXY_REDEEM_LIMIT_PER_MINUTE); see Retry-After',
    502: 'The mint answered nonsense or refused to issue; nothing was taken',
    503: 'The mint is unreachable (the token is untouched), or an operation is pending and will finish later',
  };
  return errorAnswers(text, statuses);
}

/** The error answers `statuses` of a route, each described by `text`. */
function errorAnswers(text: Record<number, string>, statuses: number[]): Record<string, TSchema> {
  return Object.fromEntries(
    statuses.map((status) => [
      String(status),
      status === 422 ? ValidationError : Type.Object(OpenAiError.properties, { description: text[status] }),
    ]),
  );
}

/** The catch-all forwarding route: no input schema (bodies stream upstream), its answers documented. */
export const ForwardSchema = {
  summary: 'Forward to the upstream',
  description:
    'Every path no other route claims is forwarded 1:1 to the upstream (PROXY_UPSTREAM_URL). ' +
    "Model-using POSTs (…/chat/completions, …/completions, …/embeddings, …/responses, and Anthropic's " +
    "/v1/messages) are billed from the upstream's usage: `Authorization: Bearer sk-…` (or a Cashu token as " +
    'bearer; `x-api-key` too), or a Cashu token in `X-Cashu` (change returned in the X-Cashu response header; for ' +
    'a stream, by POST /v1/balance/refund with the same X-Cashu once it ended). Other PUT, POST, ' +
    'DELETE and PATCH are charged a flat PROXY_WRITE_PRICE_MSAT; GET, HEAD and OPTIONS are forwarded free to a ' +
    "valid key. Cost headers: x-cashu-cost-msat, x-cost-input-msat, x-cost-output-msat and Routstr's " +
    'X-Routstr-Cost-Msats, X-Routstr-Input-Cost-Msats, X-Routstr-Output-Cost-Msats, X-Routstr-Cost-Usd. ' +
    'See docs/proxy-billing.md.',
  response: {
    200: { description: 'The upstream answer (JSON, or an SSE stream when `stream` is true)' },
    402: {
      description: "No credential, or the balance cannot cover the request (OpenAI's error in Routstr's envelope)",
    },
    403: { description: 'A write on a path without a model price, refused by PROXY_FORWARD_UNBILLED_WRITES=false' },
    422: { description: 'Validation error (FastAPI shape)' },
    502: { description: 'The upstream could not be reached' },
    503: { description: "No BTC/USD rate, or the operator's limit of requests in flight reached (Retry-After)" },
    504: { description: 'The upstream did not answer in time' },
  },
};

export const CreateQuery = Type.Object({
  initial_balance_token: Type.String({
    description: 'A Cashu token of a trusted mint: it is redeemed once and opens the account it names',
  }),
});

// --- Keys with limits (issue 14): child keys and the per-key history (../keys/key-routes.ts) -----------

const ResetPeriodSchema = Type.Union(
  [Type.Literal('daily'), Type.Literal('weekly'), Type.Literal('monthly'), Type.Literal('none')],
  { description: 'When the spending in `balance_limit` starts afresh: calendar periods in UTC (weeks from Monday)' },
);
const UnixSeconds = (description: string) => Type.Integer({ minimum: 0, description: `${description} (unix seconds)` });
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** Routstr's ChildKeyRequest. */
export const ChildKeyCreateBody = Type.Object(
  {
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 1, description: 'Keys to create' })),
    balance_limit: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 0,
          maximum: Number.MAX_SAFE_INTEGER,
          description: 'Most each key may spend per period (millisatoshis); null: only the parent balance limits it',
        }),
      ),
    ),
    balance_limit_reset: Type.Optional(Nullable(ResetPeriodSchema)),
    validity_date: Type.Optional(Nullable(UnixSeconds('When the keys stop working'))),
  },
  { additionalProperties: false },
);

export const ChildKeyEntry = Type.Object({
  id: Type.Integer({ description: 'Names the key to DELETE /v1/balance/child-key/{id}' }),
  key_prefix: Type.String({ description: "The key's first 12 characters (the node keeps only its hash)" }),
  balance_limit: Nullable(Msat('Most it may spend per period')),
  balance_limit_reset: ResetPeriodSchema,
  validity_date: Nullable(UnixSeconds('When it stops working')),
  spent_in_period: Msat('Charged in the current period'),
  reserved: Msat('Held by its requests in flight'),
  period_resets_at: Nullable(UnixSeconds('When the current period ends')),
  total_spent: Msat('Charged in all'),
  total_requests: Type.Integer(),
  revoked: Type.Boolean(),
  revoked_at: Nullable(UnixSeconds('When its parent revoked it')),
  created_at: UnixSeconds('Created'),
  last_used_at: Nullable(UnixSeconds('Last reservation or charge')),
});

/** A child key in the balance info (Routstr's `child_keys`), where only its preview can be shown. */
export const InfoChildKey = Type.Composite([
  Type.Object({
    api_key: Type.String({
      description: 'A preview of the key (its first 12 characters and "..."): the node keeps only its hash',
    }),
  }),
  ChildKeyEntry,
]);

export const WalletInfo = Type.Object({
  api_key: Type.String({
    description: 'The key naming this account: the one sent, or the `sk-…` key a Cashu bearer token names',
  }),
  balance: Msat('Everything the account owns, including the reserved part'),
  reserved: Msat('Held by requests in flight; not refundable until they settle'),
  available: Msat('balance - reserved: what requests and refunds can use'),
  total_spent: Msat('Spent on requests since the account was created'),
  total_requests: Type.Integer({ description: 'Billed requests since the account was created' }),
  created_at: Type.Integer({ description: 'Creation time, Unix seconds (UTC)' }),
  last_used_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Last use, Unix seconds (UTC)' }),
  mint: Type.String({ description: 'The mint refunds are paid at' }),
  unit: Type.String({ description: 'The unit of refund tokens (sat or msat)' }),
  child_keys: Type.Optional(
    Type.Array(InfoChildKey, {
      description:
        "The account's child keys that are not revoked, oldest first; absent when it has none (as Routstr's node)",
    }),
  ),
});

export const ChildKeyCreated = Type.Object({
  api_keys: Type.Array(Type.String(), { description: 'The new keys, shown this once (the node keeps their hashes)' }),
  count: Type.Integer(),
  cost_msats: Msat('What creating them cost (nothing at this node)'),
  cost_sats: Type.Integer(),
  parent_balance: Msat('The parent balance'),
  parent_balance_sats: Type.Integer(),
  child_keys: Type.Array(ChildKeyEntry, { description: 'The new keys, in the order of `api_keys`' }),
});

export const ChildKeyList = Type.Object({
  child_keys: Type.Array(ChildKeyEntry, { description: 'Newest first, revoked ones included' }),
  next_before: Type.Union([Type.Integer(), Type.Null()], { description: '`before` of the next page; null at the end' }),
});

export const ChildKeyParams = Type.Object({ id: Type.Integer({ minimum: 1 }) });

export const ChildKeyResetBody = Type.Object(
  { child_key: Type.String({ maxLength: 300, description: 'The child key (`sk-…`) whose period starts afresh' }) },
  { additionalProperties: false },
);

export const ChildKeyResetResult = Type.Object({ success: Type.Boolean(), message: Type.String() });

export const PageQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'At most this many' })),
    before: Type.Optional(Type.Integer({ minimum: 1, description: 'Only entries older than this id (`next_before`)' })),
  },
  { additionalProperties: false },
);

const BilledRequest = Type.Object({
  id: Type.Integer(),
  request_id: Nullable(Type.String({ description: 'The x-routstr-request-id of its answer' })),
  created_at: UnixSeconds('Reserved'),
  settled_at: Nullable(UnixSeconds('Charged')),
  path: Type.String(),
  model: Type.String(),
  stream: Type.Boolean(),
  payment: Type.String({ description: 'key (Authorization) or x-cashu' }),
  cost: Type.Object({
    total_msats: Msat('What the balance paid'),
    input_msats: Msat('Of the cost, for input'),
    output_msats: Msat('Of the cost, for output'),
  }),
  cost_msats: Msat("The cost from the upstream's usage (more than `total_msats` when the balance ran short)"),
  usage: Type.Object({ prompt_tokens: Nullable(Type.Integer()), completion_tokens: Nullable(Type.Integer()) }),
  usage_source: Nullable(Type.String({ description: "upstream (its usage) or estimate (the node's count)" })),
  child_key_id: Nullable(Type.Integer({ description: 'The child key that made it (null: the parent key)' })),
});

export const HistoryList = Type.Object({
  requests: Type.Array(BilledRequest, { description: 'Billed (settled) requests, newest first' }),
  next_before: Type.Union([Type.Integer(), Type.Null()], { description: '`before` of the next page; null at the end' }),
});

/** Documented error answers of the key routes. */
export function keyErrors(statuses: number[]): Record<string, TSchema> {
  const text: Record<number, string> = {
    400: 'A child key where only its parent may act, a validity date in the past, or too many child keys',
    401: 'Authorization malformed, unknown, revoked or expired key',
    404: 'The parent has no such child key',
    422: 'A required input is missing or invalid',
  };
  return errorAnswers(text, statuses);
}

// --- Lightning in and out (../lightning/lightning-routes.ts, docs/proxy-wallet.md#lightning) ----------------

export const InvoiceBody = Type.Object({
  amount_sats: Type.Integer({ minimum: 1, description: 'What the invoice asks for and the account is credited' }),
  purpose: Type.Union([Type.Literal('create'), Type.Literal('topup')], {
    default: 'create',
    description: '`create`: a new account (its key in the status once paid); `topup`: the `Authorization` account',
  }),
});

export const InvoiceResult = Type.Object({
  invoice_id: Type.String({ description: 'Random; names the invoice for its status (keep it secret for `create`)' }),
  bolt11: Type.String({ description: "The invoice to pay: a mint quote (NUT-04) of the node's primary mint" }),
  amount_sats: Type.Integer(),
  expires_at: Type.Integer({ description: 'Unix seconds; unpaid by then it expires and leaves nothing behind' }),
  payment_hash: Type.Union([Type.String(), Type.Null()], { description: "The invoice's payment hash (hex)" }),
});

export const InvoiceParams = Type.Object({ invoice_id: Type.String({ minLength: 1, maxLength: 64 }) });

export const InvoiceStatusResult = Type.Object({
  status: Type.Union([Type.Literal('pending'), Type.Literal('paid'), Type.Literal('expired')]),
  api_key: Type.Optional(
    Type.Union([Type.String(), Type.Null()], { description: '`create`, once paid: the key of the new account' }),
  ),
  amount_sats: Type.Integer(),
  paid_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix seconds' }),
  created_at: Type.Integer({ description: 'Unix seconds' }),
  expires_at: Type.Integer({ description: 'Unix seconds' }),
});

export const RecoverBody = Type.Object({
  bolt11: Type.String({ minLength: 1, maxLength: 8000, description: 'The invoice as it was handed out' }),
});

/** Refund body: Routstr's clients send none, or `{lightning_address}` to be paid by Lightning. */
export const RefundBody = Type.Union([
  Type.Object({
    lightning_address: Type.Optional(
      Type.String({ maxLength: 320, description: 'Pay the refund to this Lightning address (name@host)' }),
    ),
  }),
  Type.Null(),
]);

export const LightningRefundResult = Type.Object({
  refund_id: Type.Integer(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('paid'), Type.Literal('failed')], {
    description: '`pending`: the payment is in flight; the balance stays held until it ends (failed: given back)',
  }),
  recipient: Type.String({ description: 'The Lightning address paid' }),
  msats: Msat('What the invoice pays the recipient'),
  fee_reserve_msats: Msat("Held for the mint's Lightning fee; the unused part goes back to the balance"),
  fee_paid_msats: Type.Union([Type.Integer(), Type.Null()], { description: 'The Lightning fee paid, once paid' }),
  balance: Msat('What remains'),
});
