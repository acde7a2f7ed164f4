// Forward-only migrations of this service; never edit one that has shipped, add a new one.
// Numbering: 20xx wallet and accounts (part 1), 21xx billing and forwarding (part 2).
import { sql } from 'kysely';
import type { Migration } from '../../db/migrate.js';

export const proxyMigrations: Migration[] = [
  {
    // One prepaid account per API key. balance_msat is everything the account owns,
    // reserved_msat the part held by in-flight requests: available = balance - reserved.
    name: '2000_proxy_accounts',
    async up(db, t) {
      await t
        .autoId(db.schema.createTable('proxy_accounts'))
        .addColumn('key_hash', 'text', (col) => col.notNull().unique())
        .addColumn('key_prefix', 'text')
        .addColumn('balance_msat', t.bigint, (col) => col.notNull())
        .addColumn('reserved_msat', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('total_spent_msat', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('total_requests', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('mint_url', 'text', (col) => col.notNull())
        .addColumn('unit', 'text', (col) => col.notNull())
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('last_used_at', t.bigint)
        .addCheckConstraint('proxy_accounts_reserved_range', sql`reserved_msat >= 0 and reserved_msat <= balance_msat`)
        .execute();
    },
  },
  {
    // The wallet: every mint operation journaled before it is sent (proxy_mint_ops), the token
    // proofs each redemption consumes (proxy_op_inputs: one row per proof Y, so a proof can be
    // in one live redemption only), and the proofs the node holds (proxy_proofs).
    name: '2001_proxy_wallet',
    async up(db, t) {
      await t
        .autoId(db.schema.createTable('proxy_mint_ops'))
        .addColumn('kind', 'text', (col) => col.notNull()) // redeem | issue
        .addColumn('purpose', 'text', (col) => col.notNull()) // topup | bearer | payment | refund | withdraw…
        .addColumn('state', 'text', (col) => col.notNull()) // preparing | pending | done | failed
        .addColumn('mint_url', 'text', (col) => col.notNull())
        .addColumn('unit', 'text', (col) => col.notNull())
        .addColumn('token_hash', 'text')
        .addColumn('request', 'text') // JSON journal: inputs, blinded outputs with secrets and blinding factors
        .addColumn('credit_account_id', t.bigint)
        .addColumn('credit_key_hash', 'text')
        .addColumn('credit_key_prefix', 'text')
        .addColumn('credit_msat', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('debit_account_id', t.bigint)
        .addColumn('debit_msat', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('result', 'text') // issue: the encoded token handed out
        .addColumn('error', 'text')
        .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('lease_until', t.bigint, (col) => col.notNull())
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('updated_at', t.bigint, (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('proxy_mint_ops_state')
        .on('proxy_mint_ops')
        .columns(['state', 'lease_until'])
        .execute();
      await db.schema.createIndex('proxy_mint_ops_token').on('proxy_mint_ops').column('token_hash').execute();
      await db.schema
        .createIndex('proxy_mint_ops_debit')
        .on('proxy_mint_ops')
        .columns(['debit_account_id', 'kind'])
        .execute();
      await db.schema
        .createTable('proxy_op_inputs')
        .addColumn('y', 'text', (col) => col.primaryKey())
        .addColumn('op_id', t.bigint, (col) => col.notNull())
        .execute();
      await db.schema.createIndex('proxy_op_inputs_op').on('proxy_op_inputs').column('op_id').execute();
      await t
        .autoId(db.schema.createTable('proxy_proofs'))
        .addColumn('mint_url', 'text', (col) => col.notNull())
        .addColumn('unit', 'text', (col) => col.notNull())
        .addColumn('keyset_id', 'text', (col) => col.notNull())
        .addColumn('amount', t.bigint, (col) => col.notNull())
        .addColumn('secret', 'text', (col) => col.notNull())
        .addColumn('c', 'text', (col) => col.notNull())
        .addColumn('y', 'text', (col) => col.notNull().unique())
        .addColumn('dleq', 'text')
        .addColumn('state', 'text', (col) => col.notNull()) // unspent | reserved | spent
        .addColumn('source_op_id', t.bigint, (col) => col.notNull())
        .addColumn('spend_op_id', t.bigint)
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('proxy_proofs_pool')
        .on('proxy_proofs')
        .columns(['mint_url', 'unit', 'state'])
        .execute();
    },
  },
  {
    // The ledger of billed requests (src/proxy/billing/billing.ts): a row per reservation, settled to
    // the charge from the upstream's usage or released. heartbeat_at is refreshed by the
    // process serving the request, so another process can tell a dead reservation from a long stream.
    name: '2100_proxy_requests',
    async up(db, t) {
      await t
        .autoId(db.schema.createTable('proxy_requests'))
        .addColumn('account_id', t.bigint, (col) => col.notNull())
        .addColumn('request_id', 'text')
        .addColumn('path', 'text', (col) => col.notNull())
        .addColumn('model', 'text', (col) => col.notNull())
        .addColumn('stream', 'integer', (col) => col.notNull())
        .addColumn('payment', 'text', (col) => col.notNull()) // key | x-cashu
        .addColumn('status', 'text', (col) => col.notNull()) // reserved | settled | released | expired
        .addColumn('reserved_msat', t.bigint, (col) => col.notNull())
        .addColumn('charged_msat', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('cost_msat', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('input_msat', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('output_msat', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('prompt_tokens', 'integer')
        .addColumn('completion_tokens', 'integer')
        .addColumn('usage_source', 'text') // upstream | estimate
        .addColumn('upstream_status', 'integer')
        .addColumn('error', 'text')
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('heartbeat_at', t.bigint, (col) => col.notNull())
        .addColumn('settled_at', t.bigint)
        .addCheckConstraint('proxy_requests_charge_range', sql`charged_msat >= 0 and charged_msat <= reserved_msat`)
        .execute();
      await db.schema
        .createIndex('proxy_requests_live')
        .on('proxy_requests')
        .columns(['status', 'heartbeat_at'])
        .execute();
      await db.schema.createIndex('proxy_requests_account').on('proxy_requests').column('account_id').execute();
      await db.schema.createIndex('proxy_requests_created').on('proxy_requests').column('created_at').execute();
    },
  },
  {
    // The node's own money: withdrawals of its earnings (sum of charges) as Cashu tokens, one
    // lock row that serializes withdrawals across processes, and the admin page's sessions.
    name: '2101_proxy_node_admin',
    async up(db, t) {
      await t
        .autoId(db.schema.createTable('proxy_withdrawals'))
        .addColumn('amount_msat', t.bigint, (col) => col.notNull())
        .addColumn('mint_url', 'text', (col) => col.notNull())
        .addColumn('status', 'text', (col) => col.notNull()) // pending | issued | failed
        .addColumn('token', 'text')
        .addColumn('error', 'text')
        .addColumn('created_by', 'text', (col) => col.notNull())
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('updated_at', t.bigint, (col) => col.notNull())
        .addCheckConstraint('proxy_withdrawals_positive', sql`amount_msat > 0`)
        .execute();
      await db.schema
        .createTable('proxy_node_lock')
        .addColumn('id', 'integer', (col) => col.primaryKey())
        .addColumn('version', t.bigint, (col) => col.notNull())
        .execute();
      await db.insertInto('proxy_node_lock').values({ id: 1, version: 0 }).execute();
      await db.schema
        .createTable('proxy_admin_sessions')
        .addColumn('id_hash', 'text', (col) => col.primaryKey())
        .addColumn('csrf_token', 'text', (col) => col.notNull())
        .addColumn('principal', 'text', (col) => col.notNull())
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('expires_at', t.bigint, (col) => col.notNull())
        .execute();
    },
  },
  {
    // The ledger keeps one small index, of live reservations only (the stale sweep's and the
    // admin page's in-flight count): every index costs each billed request a page written at
    // reserve and at settle. The admin page and withdrawals sum the accounts' counters instead
    // of the ledger, and its recent requests are ordered by id.
    name: '2102_proxy_requests_live_index',
    async up(db) {
      for (const name of ['proxy_requests_live', 'proxy_requests_account', 'proxy_requests_created']) {
        await db.schema.dropIndex(name).execute();
      }
      await db.schema
        .createIndex('proxy_requests_live')
        .on('proxy_requests')
        .column('heartbeat_at')
        .where(sql.ref('status'), '=', sql.lit('reserved'))
        .execute();
    },
  },
  {
    // Token counts are 64-bit: an upstream reporting more than 2^31 tokens made the settlement
    // fail on PostgreSQL ("out of range for type integer"). SQLite's integers already are.
    name: '2103_proxy_requests_token_bigint',
    async up(db, t) {
      if (t.dialect !== 'postgres') return;
      for (const column of ['prompt_tokens', 'completion_tokens']) {
        await db.schema
          .alterTable('proxy_requests')
          .alterColumn(column, (col) => col.setDataType('bigint'))
          .execute();
      }
    },
  },
  {
    // Two facts the wallet's journal lacked (docs/proxy-wallet.md). claimed_at: when a refund
    // answer first carried the operation's token, so that a token finished by the recovery is
    // handed out by the next refund call instead of being stranded behind a newer one.
    // maybe_swapped: 0 once the mint refused every swap this operation sent, so that "spent"
    // then means spent elsewhere (final) rather than maybe by us (restore or retry).
    name: '2104_proxy_refund_claims',
    async up(db, t) {
      const ops = () => db.schema.alterTable('proxy_mint_ops');
      await ops().addColumn('claimed_at', t.bigint).execute();
      await ops()
        .addColumn('maybe_swapped', 'integer', (col) => col.notNull().defaultTo(1))
        .execute();
      // Tokens finished before this migration count as handed out (GET /v1/wallet/refunds lists them all).
      await db
        .updateTable('proxy_mint_ops')
        .set({ claimed_at: sql`updated_at` })
        .where('kind', '=', 'issue')
        .where('state', '=', 'done')
        .execute();
    },
  },
  // --- Lightning in and out (issue 14, RIP-08): 2110–2119 ---
  {
    // Invoices that fund an account (a NUT-04 mint quote of the primary mint each), payments out
    // by melting the node's proofs (NUT-05: refunds to a Lightning address, the operator's
    // withdrawals), and the refund address an account gave (Refund-LNURL). The mint and melt
    // themselves are journaled in proxy_mint_ops (kinds mint and melt; see src/proxy/lightning/lightning.ts).
    name: '2110_proxy_lightning',
    async up(db, t) {
      await db.schema
        .createTable('proxy_lightning_invoices')
        .addColumn('id', 'text', (col) => col.primaryKey())
        .addColumn('mint_url', 'text', (col) => col.notNull())
        .addColumn('unit', 'text', (col) => col.notNull())
        .addColumn('quote_id', 'text', (col) => col.notNull())
        .addColumn('bolt11', 'text', (col) => col.notNull().unique())
        .addColumn('payment_hash', 'text')
        .addColumn('amount_sats', t.bigint, (col) => col.notNull())
        .addColumn('purpose', 'text', (col) => col.notNull()) // create | topup
        .addColumn('account_id', t.bigint) // topup: the account credited
        .addColumn('status', 'text', (col) => col.notNull()) // pending | paid | expired
        .addColumn('op_id', t.bigint) // the mint operation, once the mint said PAID
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('expires_at', t.bigint, (col) => col.notNull())
        .addColumn('paid_at', t.bigint)
        .execute();
      await t
        .autoId(db.schema.createTable('proxy_lightning_payments'))
        .addColumn('purpose', 'text', (col) => col.notNull()) // refund | withdraw
        .addColumn('account_id', t.bigint)
        .addColumn('withdrawal_id', t.bigint)
        .addColumn('recipient', 'text', (col) => col.notNull())
        .addColumn('bolt11', 'text', (col) => col.notNull())
        .addColumn('amount_msat', t.bigint, (col) => col.notNull())
        .addColumn('fee_reserve_msat', t.bigint, (col) => col.notNull())
        .addColumn('fee_paid_msat', t.bigint)
        .addColumn('op_id', t.bigint, (col) => col.notNull().unique())
        .addColumn('status', 'text', (col) => col.notNull()) // pending | paid | failed
        .addColumn('preimage', 'text')
        .addColumn('error', 'text')
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('updated_at', t.bigint, (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('proxy_lightning_payments_account')
        .on('proxy_lightning_payments')
        .column('account_id')
        .execute();
      await db.schema
        .createTable('proxy_refund_addresses')
        .addColumn('account_id', t.bigint, (col) => col.primaryKey())
        .addColumn('address', 'text', (col) => col.notNull())
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .execute();
    },
  },
  // --- Keys with limits (issue 14, 2120–2129): child keys, Key-Expiry-Time, per-key history ------
  {
    // Child keys spend their parent's balance within their own limit per period (../keys/child-keys.ts).
    // Their spending in the period and their reservations are counted on their row in the
    // billing transaction, under the same lock as the parent's balance (billing/store.ts, applyBillingSteps).
    // proxy_requests.child_key_id names the child that made a billed request; the two indexes
    // serve GET /v1/balance/history (one index write per request, at its insert only).
    // proxy_accounts.expires_at: Key-Expiry-Time given with a token when it opened the account.
    name: '2120_proxy_child_keys',
    async up(db, t) {
      await t
        .autoId(db.schema.createTable('proxy_child_keys'))
        .addColumn('parent_account_id', t.bigint, (col) => col.notNull())
        .addColumn('key_hash', 'text', (col) => col.notNull().unique())
        .addColumn('key_prefix', 'text', (col) => col.notNull())
        .addColumn('limit_msat', t.bigint) // null: no limit of its own
        .addColumn('reset_period', 'text', (col) => col.notNull()) // daily | weekly | monthly | none
        .addColumn('period_start', t.bigint, (col) => col.notNull())
        .addColumn('period_spent_msat', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('reserved_msat', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('total_spent_msat', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('total_requests', t.bigint, (col) => col.notNull().defaultTo(0))
        .addColumn('expires_at', t.bigint)
        .addColumn('revoked_at', t.bigint)
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('last_used_at', t.bigint)
        .addCheckConstraint('proxy_child_keys_counters', sql`reserved_msat >= 0 and period_spent_msat >= 0`)
        .execute();
      await db.schema
        .createIndex('proxy_child_keys_parent')
        .on('proxy_child_keys')
        .columns(['parent_account_id', 'id'])
        .execute();
      await db.schema.alterTable('proxy_requests').addColumn('child_key_id', t.bigint).execute();
      await db.schema
        .createIndex('proxy_requests_account_history')
        .on('proxy_requests')
        .columns(['account_id', 'id'])
        .execute();
      await db.schema
        .createIndex('proxy_requests_child_history')
        .on('proxy_requests')
        .columns(['child_key_id', 'id'])
        .where(sql.ref('child_key_id'), 'is not', null)
        .execute();
      await db.schema.alterTable('proxy_accounts').addColumn('expires_at', t.bigint).execute();
    },
  },
  {
    // Refunds of expired keys to their Refund-LNURL address (../lightning/expiry-refunds.ts): one row per
    // account that has both an expiry and an address, due at its expiry; the job walks the due rows
    // by the index (so its work per pass is its batch, however many accounts expired), counts its
    // attempts and sets when it may try again (the backoff, for every process), and deletes the
    // row once nothing is left to pay.
    name: '2130_proxy_expiry_refunds',
    async up(db, t) {
      await db.schema
        .createTable('proxy_expiry_refunds')
        .addColumn('account_id', t.bigint, (col) => col.primaryKey())
        .addColumn('attempts', 'integer', (col) => col.notNull())
        .addColumn('next_attempt_at', t.bigint, (col) => col.notNull())
        .addColumn('last_error', 'text')
        .addColumn('updated_at', t.bigint, (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('proxy_expiry_refunds_due')
        .on('proxy_expiry_refunds')
        .column('next_attempt_at')
        .execute();
      await sql`
        insert into proxy_expiry_refunds (account_id, attempts, next_attempt_at, updated_at)
        select a.id, 0, a.expires_at, a.expires_at
        from proxy_accounts a join proxy_refund_addresses r on r.account_id = a.id
        where a.expires_at is not null`.execute(db);
    },
  },
  {
    // PostgreSQL only: one shared billing batch in one statement (billing/store.ts, applyBillingSteps). Each
    // statement from the node is a round trip, and a transaction of begin, lock, settle, update,
    // insert and commit held the account's row lock for six of them; this function does the same
    // work in one (bench/README.md, "Group commit of billing"). The amounts are planned by the
    // caller for a balance that affords them; when one does not fit what the account has available
    // under the lock, the function raises QB001, which undoes the whole batch, and the caller plans
    // again in a transaction. Batches with child keys or charges above their reservation take that
    // transaction from the start. Arrays carry the steps, one element a step, in the order they came.
    name: '2140_proxy_billing_function',
    async up(db, t) {
      if (t.dialect !== 'postgres') return;
      await BILL_STEPS_FUNCTION.execute(db);
    },
  },
  {
    // PostgreSQL only: proxy_bill_steps finds its ledger rows by their key and keeps its plans.
    // Before, each settle scanned the paying account's history and the live index's dead entries,
    // so a hot account's batches cost the server more with every request it had made
    // (bench/README.md, "Group commit of billing").
    name: '2150_proxy_billing_function_by_key',
    async up(db, t) {
      if (t.dialect !== 'postgres') return;
      await BILL_STEPS_FUNCTION.execute(db);
    },
  },
  {
    // The operator API (../operator/): its bearer tokens (sessions and CLI tokens, hashed), the
    // operator's password once it can be changed at run time, and the audit log of every change.
    name: '2160_proxy_operator',
    async up(db, t) {
      await t
        .autoId(db.schema.createTable('proxy_operator_tokens'))
        .addColumn('kind', 'text', (col) => col.notNull())
        .addColumn('name', 'text', (col) => col.notNull())
        .addColumn('token_hash', 'text', (col) => col.notNull().unique())
        .addColumn('preview', 'text', (col) => col.notNull())
        .addColumn('created_by', 'text', (col) => col.notNull())
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('last_used_at', t.bigint)
        .addColumn('expires_at', t.bigint)
        .execute();
      await db.schema
        .createTable('proxy_operator_password')
        .addColumn('id', 'integer', (col) => col.primaryKey())
        .addColumn('salt', 'text', (col) => col.notNull())
        .addColumn('hash', 'text', (col) => col.notNull())
        .addColumn('updated_at', t.bigint, (col) => col.notNull())
        .execute();
      await t
        .autoId(db.schema.createTable('proxy_audit_log'))
        .addColumn('at', t.bigint, (col) => col.notNull())
        .addColumn('actor', 'text', (col) => col.notNull())
        .addColumn('action', 'text', (col) => col.notNull())
        .addColumn('target', 'text', (col) => col.notNull())
        .addColumn('before', 'text')
        .addColumn('after', 'text')
        .execute();
      await db.schema.createIndex('proxy_audit_log_at').on('proxy_audit_log').column('at').execute();
    },
  },
  {
    // Run-time configuration (docs/proxy-operator.md, "Run-time configuration"): the providers, their
    // models and the node's settings live here, seeded from the files and environment once; every
    // change bumps proxy_config_version in its transaction, which every process polls.
    name: '2200_proxy_runtime_config',
    async up(db, t) {
      await db.schema
        .createTable('proxy_config_version')
        .addColumn('id', 'integer', (col) => col.primaryKey())
        .addColumn('version', t.bigint, (col) => col.notNull())
        .addColumn('updated_at', t.bigint, (col) => col.notNull())
        .execute();
      // Ids are never reused (Routstr's rule too): a deleted provider's id never names another one.
      await t
        .autoId(db.schema.createTable('proxy_providers'))
        .addColumn('slug', 'text', (col) => col.notNull().unique())
        .addColumn('provider_type', 'text', (col) => col.notNull())
        .addColumn('base_url', 'text', (col) => col.notNull())
        .addColumn('api_key', 'text', (col) => col.notNull())
        .addColumn('api_version', 'text')
        .addColumn('enabled', 'integer', (col) => col.notNull())
        .addColumn('provider_fee', 'text', (col) => col.notNull())
        .addColumn('provider_settings', 'text')
        .addColumn('weight', 'integer', (col) => col.notNull())
        .addColumn('paths', 'text')
        .addColumn('connections', 'integer')
        .addColumn('fetch_models', 'integer', (col) => col.notNull())
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('updated_at', t.bigint, (col) => col.notNull())
        .execute();
      await db.schema
        .createTable('proxy_provider_models')
        .addColumn('provider_id', t.bigint, (col) => col.notNull())
        .addColumn('id', 'text', (col) => col.notNull())
        .addColumn('name', 'text', (col) => col.notNull())
        .addColumn('description', 'text', (col) => col.notNull())
        .addColumn('created', t.bigint, (col) => col.notNull())
        .addColumn('context_length', t.bigint, (col) => col.notNull())
        .addColumn('architecture', 'text', (col) => col.notNull())
        .addColumn('pricing', 'text', (col) => col.notNull())
        .addColumn('per_request_limits', 'text')
        .addColumn('top_provider', 'text')
        .addColumn('canonical_slug', 'text')
        .addColumn('alias_ids', 'text')
        .addColumn('enabled', 'integer', (col) => col.notNull())
        .addColumn('forwarded_model_id', 'text')
        .addColumn('updated_at', t.bigint, (col) => col.notNull())
        .addPrimaryKeyConstraint('proxy_provider_models_pk', ['provider_id', 'id'])
        .execute();
      await db.schema
        .createTable('proxy_node_settings')
        .addColumn('key', 'text', (col) => col.primaryKey())
        .addColumn('value', 'text', (col) => col.notNull())
        .addColumn('updated_at', t.bigint, (col) => col.notNull())
        .execute();
    },
  },
  {
    // Usage analytics (../usage/): the provider that answered a billed request, written by the same
    // statement as its settle or release (a nullable column without a default costs no rewrite), and
    // the rollups a periodic job fills from the ledger off the request path, so that the ledger
    // keeps its one index and the operator's dashboard never scans it.
    name: '2210_proxy_usage',
    async up(db, t) {
      await db.schema.alterTable('proxy_requests').addColumn('provider', 'text').execute();
      // grain 'm': a minute per model and provider (account_id 0); 'h': an hour per model, provider and key.
      const rollupKey = (table: ReturnType<typeof db.schema.createTable>) =>
        table
          .addColumn('grain', 'text', (col) => col.notNull())
          .addColumn('at', t.bigint, (col) => col.notNull())
          .addColumn('model', 'text', (col) => col.notNull())
          .addColumn('provider', 'text', (col) => col.notNull())
          .addColumn('account_id', t.bigint, (col) => col.notNull());
      let rollup = rollupKey(db.schema.createTable('proxy_usage_rollup'));
      for (const column of USAGE_COUNTERS) rollup = rollup.addColumn(column, t.bigint, (col) => col.notNull());
      await rollup
        .addPrimaryKeyConstraint('proxy_usage_rollup_pk', ['grain', 'at', 'model', 'provider', 'account_id'])
        .execute();
      await rollupKey(db.schema.createTable('proxy_usage_latency'))
        .addColumn('bin', 'integer', (col) => col.notNull())
        .addColumn('n', t.bigint, (col) => col.notNull())
        .addPrimaryKeyConstraint('proxy_usage_latency_pk', ['grain', 'at', 'model', 'provider', 'account_id', 'bin'])
        .execute();
      // The failed requests themselves (the ledger's id), for the error details.
      await db.schema
        .createTable('proxy_usage_errors')
        .addColumn('id', t.bigint, (col) => col.primaryKey())
        .addColumn('at', t.bigint, (col) => col.notNull())
        .addColumn('request_id', 'text')
        .addColumn('account_id', t.bigint, (col) => col.notNull())
        .addColumn('path', 'text', (col) => col.notNull())
        .addColumn('model', 'text', (col) => col.notNull())
        .addColumn('provider', 'text', (col) => col.notNull())
        .addColumn('status', 'text', (col) => col.notNull())
        .addColumn('error_type', 'text', (col) => col.notNull())
        .addColumn('upstream_status', 'integer')
        .addColumn('message', 'text', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('proxy_usage_errors_at').on('proxy_usage_errors').column('at').execute();
      // How far the job has read the ledger (one row), and the rows it must look at again: still
      // reserved, or ids not visible yet (a PostgreSQL transaction commits after a later one, or rolled back).
      await db.schema
        .createTable('proxy_usage_state')
        .addColumn('id', 'integer', (col) => col.primaryKey())
        .addColumn('last_id', t.bigint, (col) => col.notNull())
        .addColumn('pruned_at', t.bigint, (col) => col.notNull())
        .execute();
      await db.insertInto('proxy_usage_state').values({ id: 1, last_id: 0, pruned_at: 0 }).execute();
      await db.schema
        .createTable('proxy_usage_pending')
        .addColumn('id', t.bigint, (col) => col.primaryKey())
        .addColumn('give_up_at', t.bigint)
        .execute();
    },
  },
  {
    // PostgreSQL only: proxy_bill_steps writes the provider of each settle and release.
    name: '2211_proxy_billing_function_provider',
    async up(db, t) {
      if (t.dialect !== 'postgres') return;
      await sql`drop function if exists proxy_bill_steps(${sql.raw(BILL_STEPS_2150_ARGUMENTS)})`.execute(db);
      await BILL_STEPS_FUNCTION.execute(db);
    },
  },
];

/** The counters of a usage rollup row (migration 2210, ../usage/store.ts). */
export const USAGE_COUNTERS = [
  'requests',
  'settled',
  'failed',
  'upstream_errors',
  'input_tokens',
  'output_tokens',
  'charged_msat',
  'cost_msat',
  'latency_ms',
] as const;

/** The argument types of proxy_bill_steps before migration 2211 (which drops that version). */
const BILL_STEPS_2150_ARGUMENTS = [
  'bigint[]',
  ...Array(9).fill('bigint[]'),
  'text[]',
  'integer[]',
  'bigint[]',
  'bigint[]',
  'bigint[]',
  'text[]',
  'text[]',
  'integer[]',
  'bigint[]',
  'bigint[]',
  'bigint[]',
  'text[]',
  'text[]',
  'text[]',
  'integer[]',
  'text[]',
  'bigint[]',
  'bigint[]',
].join(', ');

/** proxy_bill_steps as it is now (migrations 2140, 2150 and 2211: the provider of settles and releases). */
const BILL_STEPS_FUNCTION = sql`
        create or replace function proxy_bill_steps(
          p_accounts bigint[],
          s_id bigint[], s_account bigint[], s_reserved bigint[], s_charged bigint[], s_cost bigint[],
          s_input bigint[], s_output bigint[], s_prompt bigint[], s_completion bigint[], s_source text[],
          s_upstream integer[], s_now bigint[], s_provider text[],
          f_id bigint[], f_account bigint[], f_status text[], f_error text[], f_upstream integer[],
          f_stale_before bigint[], f_now bigint[], f_provider text[],
          h_account bigint[], h_request text[], h_path text[], h_model text[], h_stream integer[],
          h_payment text[], h_amount bigint[], h_now bigint[],
          out settled bigint[], out finished bigint[], out held bigint[], out available bigint[], out refusal text[]
        ) language plpgsql
        -- Plans made once per connection: replanning each statement with the batch's arrays cost a
        -- quarter of the function's time.
        set plan_cache_mode = force_generic_plan
        as $$
        declare
          a_id bigint[]; a_avail bigint[]; a_expires bigint[];
          d_account bigint[]; d_reserved bigint[]; d_charged bigint[];
          take boolean[] := '{}';
          k integer;
        begin
          -- A batch that charges nothing (holds and releases) does not wait for its commit to reach
          -- the disk; a later charge's commit makes it durable (docs/proxy-billing.md).
          if coalesce(array_length(s_id, 1), 0) = 0 then
            perform set_config('synchronous_commit', 'off', true);
          end if;

          -- The accounts, locked in ascending id order (as the transactional path locks them).
          select coalesce(array_agg(l.id order by l.id), '{}'),
                 coalesce(array_agg(l.balance_msat - l.reserved_msat order by l.id), '{}'),
                 coalesce(array_agg(l.expires_at order by l.id), '{}')
            into a_id, a_avail, a_expires
            from (select id, balance_msat, reserved_msat, expires_at from proxy_accounts
                  where id = any(p_accounts) order by id for update) l;

          -- Settles and releases of rows still reserved, with the account and amount they were made for.
          -- The rows are found by their key: a condition on t.account_id let the planner scan the
          -- account's whole history and the live index's dead entries (bench/README.md).
          with done as (
            update proxy_requests t set status = 'settled', charged_msat = v.charged, cost_msat = v.cost,
                   input_msat = v.input, output_msat = v.output, prompt_tokens = v.prompt,
                   completion_tokens = v.completion, usage_source = v.source, upstream_status = v.upstream,
                   settled_at = v.now, provider = v.provider
              from unnest(s_id, s_account, s_reserved, s_charged, s_cost, s_input, s_output, s_prompt,
                          s_completion, s_source, s_upstream, s_now, s_provider)
                   as v(id, account, reserved, charged, cost, input, output, prompt, completion, source, upstream, now,
                        provider)
             where t.id = v.id and t.account_id = v.account and t.reserved_msat = v.reserved
               and t.status = 'reserved' and v.account = any(a_id)
            returning t.id, t.account_id, t.reserved_msat, v.charged)
          select coalesce(array_agg(id), '{}'), coalesce(array_agg(account_id), '{}'),
                 coalesce(array_agg(reserved_msat), '{}'), coalesce(array_agg(charged), '{}')
            into settled, d_account, d_reserved, d_charged from done;
          with done as (
            update proxy_requests t set status = v.status, error = v.error, upstream_status = v.upstream,
                   settled_at = v.now, provider = v.provider
              from unnest(f_id, f_account, f_status, f_error, f_upstream, f_stale_before, f_now, f_provider)
                   as v(id, account, status, error, upstream, stale_before, now, provider)
             where t.id = v.id and t.account_id = v.account and t.status = 'reserved'
               and t.child_key_id is null and v.account = any(a_id)
               and (v.stale_before is null or t.heartbeat_at < v.stale_before)
            returning t.id, t.account_id, t.reserved_msat)
          select coalesce(array_agg(id), '{}'), d_account || coalesce(array_agg(account_id), '{}'),
                 d_reserved || coalesce(array_agg(reserved_msat), '{}'),
                 d_charged || coalesce(array_agg(0::bigint), '{}')
            into finished, d_account, d_reserved, d_charged from done;
          for i in 1 .. coalesce(array_length(d_account, 1), 0) loop
            k := array_position(a_id, d_account[i]);
            a_avail[k] := a_avail[k] + d_reserved[i] - d_charged[i];
          end loop;

          -- New reservations in the order they came, each from what is available after those before it.
          available := '{}'; refusal := '{}';
          for i in 1 .. coalesce(array_length(h_account, 1), 0) loop
            k := array_position(a_id, h_account[i]);
            if k is null then
              available := available || null::bigint; refusal := refusal || null::text; take := take || false;
            elsif a_expires[k] is not null and a_expires[k] <= h_now[i] then
              available := available || greatest(a_avail[k], 0); refusal := refusal || 'expired'::text;
              take := take || false;
            elsif a_avail[k] < h_amount[i] then
              raise exception 'reservation % does not fit the available balance', i using errcode = 'QB001';
            else
              available := available || greatest(a_avail[k], 0); refusal := refusal || null::text;
              take := take || true;
              a_avail[k] := a_avail[k] - h_amount[i];
            end if;
          end loop;

          update proxy_accounts t
             set reserved_msat = t.reserved_msat + d.reserved, balance_msat = t.balance_msat - d.charged,
                 total_spent_msat = t.total_spent_msat + d.charged, total_requests = t.total_requests + d.requests,
                 last_used_at = coalesce(d.used, t.last_used_at)
            from (select x.account, sum(x.reserved)::bigint as reserved, sum(x.charged)::bigint as charged,
                         sum(x.requests)::bigint as requests, max(x.used) as used
                    from (select s.account, -s.reserved as reserved, s.charged, 1 as requests, s.now as used
                            from unnest(s_id, s_account, s_reserved, s_charged, s_now)
                                 as s(id, account, reserved, charged, now)
                           where s.id = any(settled)
                          union all
                          select f.account, -f.reserved, 0, 0, null
                            from unnest(d_account, d_reserved) with ordinality as f(account, reserved, n)
                           where f.n > coalesce(array_length(settled, 1), 0)
                          union all
                          select h.account, h.amount, 0, 0, h.now
                            from unnest(h_account, h_amount, h_now, take) as h(account, amount, now, taken)
                           where h.taken) x
                   group by x.account) d
           where t.id = d.account and t.id = any(a_id);

          with ins as (
            insert into proxy_requests (account_id, request_id, path, model, stream, payment, status,
                                        reserved_msat, created_at, heartbeat_at)
            select h.account, h.request, h.path, h.model, h.stream, h.payment, 'reserved', h.amount, h.now, h.now
              from unnest(h_account, h_request, h_path, h_model, h_stream, h_payment, h_amount, h_now, take)
                   with ordinality as h(account, request, path, model, stream, payment, amount, now, taken, n)
             where h.taken order by h.n
            returning id)
          select coalesce(array_agg(id order by id), '{}') into held from ins;
        end
        $$`;
