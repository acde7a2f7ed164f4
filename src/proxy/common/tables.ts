// Row types of this service's tables (kept in step with migrations.ts).
import type { Generated } from 'kysely';

export interface ProxyAccountsTable {
  id: Generated<number>;
  /** sha256 hex of the full "sk-…" key; the key itself is never stored. */
  key_hash: string;
  /** The key's first 12 characters, to recognise an account on the admin page. */
  key_prefix: string | null;
  /** Everything the account owns, including reserved_msat. */
  balance_msat: number;
  /** Held by in-flight requests; available = balance_msat - reserved_msat. */
  reserved_msat: Generated<number>;
  total_spent_msat: Generated<number>;
  total_requests: Generated<number>;
  mint_url: string;
  unit: string;
  created_at: number;
  last_used_at: number | null;
  /** Key-Expiry-Time (ms) given with the token that opened it; null: never expires (migration 2120). */
  expires_at: Generated<number | null>;
}

/** mint and melt: Lightning in and out (./lightning.ts); the swap journal drives redeem and issue only. */
/** foreign: a token of an untrusted mint, melted to pay a mint quote of the primary mint (../wallet/foreign.ts). */
export type MintOpKind = 'redeem' | 'issue' | 'mint' | 'melt' | 'foreign';
export type MintOpState = 'preparing' | 'pending' | 'done' | 'failed';

export interface ProxyMintOpsTable {
  id: Generated<number>;
  kind: MintOpKind;
  purpose: string;
  state: MintOpState;
  mint_url: string;
  unit: string;
  token_hash: string | null;
  request: string | null;
  credit_account_id: number | null;
  credit_key_hash: string | null;
  credit_key_prefix: string | null;
  credit_msat: Generated<number>;
  debit_account_id: number | null;
  debit_msat: Generated<number>;
  result: string | null;
  error: string | null;
  attempts: Generated<number>;
  lease_until: number;
  /** Issue: when a refund answer first carried the token (null: finished, never handed out). */
  claimed_at: number | null;
  /** 1 while some swap this operation sent may have been performed; 0 once the mint refused them all. */
  maybe_swapped: Generated<number>;
  created_at: number;
  updated_at: number;
}

export interface ProxyOpInputsTable {
  y: string;
  op_id: number;
}

export type ProofState = 'unspent' | 'reserved' | 'spent';

export interface ProxyProofsTable {
  id: Generated<number>;
  mint_url: string;
  unit: string;
  keyset_id: string;
  amount: number;
  secret: string;
  c: string;
  y: string;
  dleq: string | null;
  state: ProofState;
  source_op_id: number;
  spend_op_id: number | null;
  created_at: number;
}

export type RequestStatus = 'reserved' | 'settled' | 'released' | 'expired';

/** A billed request (migration 2100, src/proxy/billing/billing.ts). */
export interface ProxyRequestsTable {
  id: Generated<number>;
  account_id: number;
  request_id: string | null;
  path: string;
  model: string;
  stream: number;
  payment: 'key' | 'x-cashu';
  status: RequestStatus;
  reserved_msat: number;
  /** What the account paid: the cost from usage, at most the reservation (node absorbs the rest). */
  charged_msat: Generated<number>;
  /** The cost computed from usage (input + output + per-request price). */
  cost_msat: Generated<number>;
  input_msat: Generated<number>;
  output_msat: Generated<number>;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  usage_source: 'upstream' | 'estimate' | null;
  upstream_status: number | null;
  error: string | null;
  created_at: number;
  heartbeat_at: number;
  settled_at: number | null;
  /** The child key that made the request (null: the account's own key); migration 2120. */
  child_key_id: Generated<number | null>;
  /** The provider that answered (null: none did, or before migration 2210). */
  provider: Generated<string | null>;
}

/** Withdrawals of the node's earnings as Cashu tokens (migration 2101, src/proxy/admin/admin-data.ts). */
export interface ProxyWithdrawalsTable {
  id: Generated<number>;
  amount_msat: number;
  mint_url: string;
  status: 'pending' | 'issued' | 'failed';
  token: string | null;
  error: string | null;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface ProxyAdminSessionsTable {
  /** sha256 of the session cookie's value. */
  id_hash: string;
  csrf_token: string;
  principal: string;
  created_at: number;
  expires_at: number;
}

export interface ProxyTables {
  proxy_accounts: ProxyAccountsTable;
  proxy_mint_ops: ProxyMintOpsTable;
  proxy_op_inputs: ProxyOpInputsTable;
  proxy_proofs: ProxyProofsTable;
  proxy_requests: ProxyRequestsTable;
  proxy_withdrawals: ProxyWithdrawalsTable;
  proxy_node_lock: { id: number; version: number };
  proxy_admin_sessions: ProxyAdminSessionsTable;
  proxy_child_keys: ProxyChildKeysTable;
  proxy_lightning_invoices: ProxyLightningInvoicesTable;
  proxy_lightning_payments: ProxyLightningPaymentsTable;
  proxy_refund_addresses: { account_id: number; address: string; created_at: number };
  proxy_expiry_refunds: ProxyExpiryRefundsTable;
  proxy_operator_tokens: ProxyOperatorTokensTable;
  proxy_operator_password: ProxyOperatorPasswordTable;
  proxy_audit_log: ProxyAuditLogTable;
  proxy_usage_rollup: ProxyUsageRollupTable;
  proxy_usage_latency: ProxyUsageKey & { bin: number; n: number };
  proxy_usage_errors: ProxyUsageErrorsTable;
  proxy_usage_state: { id: number; last_id: number; pruned_at: number };
  proxy_usage_pending: { id: number; give_up_at: number | null };
  proxy_config_version: { id: number; version: number; updated_at: number };
  proxy_providers: ProxyProvidersTable;
  proxy_provider_models: ProxyProviderModelsTable;
  proxy_node_settings: { key: string; value: string; updated_at: number };
}

/** An upstream provider (migration 2200, ../settings/): Routstr's UpstreamProviderRow and quartet's fields. */
export interface ProxyProvidersTable {
  id: Generated<number>;
  /** Unique; the provider's name in logs. */
  slug: string;
  /** Routstr's provider type (openai, anthropic, openrouter, generic, routstr). */
  provider_type: string;
  /** As the operator gave it; a trailing /v1 is dropped when forwarding (callers' paths carry it). */
  base_url: string;
  /** '' for none; never answered. */
  api_key: string;
  api_version: string | null;
  enabled: number;
  /** Multiplier of the prices of every model the provider serves, decimal text ("1.01"). */
  provider_fee: string;
  /** Routstr's provider_settings JSON, kept as given. */
  provider_settings: string | null;
  weight: number;
  /** JSON array of path prefixes; null: by type. */
  paths: string | null;
  connections: number | null;
  /** 1: also serve the priced models of its own GET /v1/models, times the fee. */
  fetch_models: number;
  created_at: number;
  updated_at: number;
}

/** A model one provider serves, with its prices (Routstr's ModelRow); JSON columns as text. */
export interface ProxyProviderModelsTable {
  provider_id: number;
  id: string;
  name: string;
  description: string;
  created: number;
  /** 0: unknown. */
  context_length: number;
  architecture: string;
  /** USD per token ({prompt, completion, request, input_cache_read, …}), decimal text. */
  pricing: string;
  per_request_limits: string | null;
  top_provider: string | null;
  canonical_slug: string | null;
  alias_ids: string | null;
  enabled: number;
  /** The id sent upstream; null: the model's own id. */
  forwarded_model_id: string | null;
  updated_at: number;
}

/** The key of a usage rollup row (migration 2210, ../usage/store.ts). */
export interface ProxyUsageKey {
  /** 'm': a minute per model and provider (account_id 0); 'h': an hour per model, provider and key. */
  grain: 'm' | 'h';
  /** The bucket's start, Unix ms. */
  at: number;
  model: string;
  /** '' when no provider answered. */
  provider: string;
  account_id: number;
}

export interface ProxyUsageRollupTable extends ProxyUsageKey {
  /** Finished billed requests (settled + failed). */
  requests: number;
  settled: number;
  /** Released or expired: nothing charged. */
  failed: number;
  /** Failed with an upstream status of 500 or more, or without an answer from any upstream. */
  upstream_errors: number;
  input_tokens: number;
  output_tokens: number;
  charged_msat: number;
  cost_msat: number;
  /** Sum of the settled requests' latencies (settled_at - created_at). */
  latency_ms: number;
}

/** A failed billed request (its ledger id), for the operator's error details. */
export interface ProxyUsageErrorsTable {
  id: number;
  at: number;
  request_id: string | null;
  account_id: number;
  path: string;
  model: string;
  provider: string;
  status: string;
  error_type: string;
  upstream_status: number | null;
  message: string;
}

/** Bearer tokens of the operator API (migration 2160, ../operator/operator-auth.ts). */
export interface ProxyOperatorTokensTable {
  id: Generated<number>;
  /** `session` (from /admin/api/login, short-lived) or `cli` (named, long-lived, revocable). */
  kind: 'session' | 'cli';
  name: string;
  /** sha256 hex of the token; the token itself is shown once and never stored. */
  token_hash: string;
  /** Routstr's `token_preview`: the token's first 8 and last 4 characters. */
  preview: string;
  /** Who created it (an audit actor). */
  created_by: string;
  created_at: number;
  last_used_at: number | null;
  /** Unix ms; null: never (CLI tokens without expiry). */
  expires_at: number | null;
}

/**
 * The operator's password once changed through PATCH /admin/api/password (one row, id 1): from
 * then on it replaces PROXY_ADMIN_PASSWORD's, in every process.
 */
export interface ProxyOperatorPasswordTable {
  id: number;
  /** scrypt of the password and its salt, hex. */
  salt: string;
  hash: string;
  updated_at: number;
}

/** Every change made through the operator API or page: who, when, what, before and after. */
export interface ProxyAuditLogTable {
  id: Generated<number>;
  at: number;
  actor: string;
  /** e.g. `provider.update`, `settings.update`, `cli_token.create`. */
  action: string;
  /** What was changed (a provider's id, a key's hash…); '' for the node itself. */
  target: string;
  /** JSON of the state before and after, secrets redacted; null where there was none. */
  before: string | null;
  after: string | null;
}

/**
 * An account with an expiry and a refund address: the expiry job's schedule (migration 2130,
 * ../lightning/expiry-refunds.ts).
 */
export interface ProxyExpiryRefundsTable {
  account_id: number;
  attempts: number;
  /** Unix ms from which the job may pay it: its expiry, then the backoff (and the lease of a run). */
  next_attempt_at: number;
  last_error: string | null;
  updated_at: number;
}

export type ResetPeriod = 'daily' | 'weekly' | 'monthly' | 'none';

/** A child key: spends its parent's balance within its own limit per period (migration 2120, ../keys/child-keys.ts). */
export interface ProxyChildKeysTable {
  id: Generated<number>;
  parent_account_id: number;
  /** sha256 hex of the full "sk-…" key, as proxy_accounts.key_hash. */
  key_hash: string;
  key_prefix: string;
  /** Most it may spend per period; null: only the parent's balance limits it. */
  limit_msat: number | null;
  reset_period: ResetPeriod;
  /** When its current period began (ms); period_spent_msat counts charges since. */
  period_start: number;
  period_spent_msat: Generated<number>;
  /** Held by its requests in flight (also counted in the parent's reserved_msat). */
  reserved_msat: Generated<number>;
  total_spent_msat: Generated<number>;
  total_requests: Generated<number>;
  expires_at: number | null;
  revoked_at: number | null;
  created_at: number;
  last_used_at: number | null;
}

/** An invoice that funds an account: a mint quote of the primary mint (migration 2110). */
export interface ProxyLightningInvoicesTable {
  /** The invoice_id handed out: random, and for `create` the seed of the new account's key. */
  id: string;
  mint_url: string;
  unit: string;
  quote_id: string;
  bolt11: string;
  payment_hash: string | null;
  amount_sats: number;
  purpose: 'create' | 'topup';
  account_id: number | null;
  status: 'pending' | 'paid' | 'expired';
  /** The mint operation (proxy_mint_ops, kind mint) started once the mint said PAID. */
  op_id: number | null;
  created_at: number;
  expires_at: number;
  paid_at: number | null;
}

/** A Lightning payment out of the node's proofs by a melt (migration 2110). */
export interface ProxyLightningPaymentsTable {
  id: Generated<number>;
  purpose: 'refund' | 'withdraw';
  account_id: number | null;
  withdrawal_id: number | null;
  recipient: string;
  bolt11: string;
  amount_msat: number;
  fee_reserve_msat: number;
  fee_paid_msat: number | null;
  op_id: number;
  status: 'pending' | 'paid' | 'failed';
  preimage: string | null;
  error: string | null;
  created_at: number;
  updated_at: number;
}
