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
}

export type MintOpKind = 'redeem' | 'issue';
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

export interface ProxyTables {
  proxy_accounts: ProxyAccountsTable;
  proxy_mint_ops: ProxyMintOpsTable;
  proxy_op_inputs: ProxyOpInputsTable;
  proxy_proofs: ProxyProofsTable;
}
