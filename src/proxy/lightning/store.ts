// SQL of Lightning: the node's earnings and their withdrawals, invoices that fund accounts, payments
// out by melting, refund addresses and the refunds of expired keys. Sums are cast to bigint in SQL:
// PostgreSQL's sum() of a bigint is numeric (a string to pg), while a bigint arrives as a number.
import { sql, type Insertable, type Selectable } from 'kysely';
import type { Executor } from '../../db/index.js';
import type {
  ProxyLightningInvoicesTable,
  ProxyLightningPaymentsTable,
  ProxyWithdrawalsTable,
} from '../common/tables.js';
import type { MintOpRow } from '../wallet/store.js';

/** Sums over every account; `earned` is their spent counters, kept in the transaction of each charge. */
export async function accountTotals(db: Executor) {
  return db
    .selectFrom('proxy_accounts')
    .select([
      sql<number>`cast(coalesce(sum(balance_msat), 0) as bigint)`.as('held'),
      sql<number>`cast(coalesce(sum(reserved_msat), 0) as bigint)`.as('reserved'),
      sql<number>`cast(coalesce(sum(total_spent_msat), 0) as bigint)`.as('earned'),
      sql<number>`cast(coalesce(sum(total_requests), 0) as bigint)`.as('settled'),
      sql<number>`count(*)`.as('accounts'),
    ])
    .executeTakeFirstOrThrow();
}

/** Paid out, or being paid out, to the operator. */
export async function withdrawnMsat(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('proxy_withdrawals')
    .select(sql<number>`cast(coalesce(sum(amount_msat), 0) as bigint)`.as('total'))
    .where('status', '!=', 'failed')
    .executeTakeFirstOrThrow();
  return row.total;
}

/** Takes the node's lock row: one check-and-record of the earnings at a time, across processes. */
export async function lockNode(db: Executor): Promise<void> {
  await db
    .updateTable('proxy_node_lock')
    .set({ version: sql<number>`version + 1` })
    .where('id', '=', 1)
    .execute();
}

export async function insertWithdrawal(db: Executor, values: Insertable<ProxyWithdrawalsTable>): Promise<number> {
  const row = await db.insertInto('proxy_withdrawals').values(values).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

// ------------------------------------------------------------------------------------------------
// Lightning in and out (lightning.ts, lightning-pay.ts; docs/proxy-wallet.md#lightning): invoices
// that fund accounts, payments out by melting, and the refund address of an account. Each state
// change is conditional on the state it leaves, so two pollers or two processes settle once.

export type LightningInvoice = Selectable<ProxyLightningInvoicesTable>;
export type LightningPayment = Selectable<ProxyLightningPaymentsTable>;

export async function insertLightningInvoice(db: Executor, row: Insertable<ProxyLightningInvoicesTable>) {
  await db.insertInto('proxy_lightning_invoices').values(row).execute();
}

export async function lightningInvoiceById(db: Executor, id: string): Promise<LightningInvoice | undefined> {
  return db.selectFrom('proxy_lightning_invoices').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function lightningInvoiceByBolt11(db: Executor, bolt11: string): Promise<LightningInvoice | undefined> {
  return db.selectFrom('proxy_lightning_invoices').selectAll().where('bolt11', '=', bolt11).executeTakeFirst();
}

/** An unpaid invoice past its expiry ends; nothing was started for it. */
export async function expireLightningInvoice(db: Executor, id: string): Promise<void> {
  await db
    .updateTable('proxy_lightning_invoices')
    .set({ status: 'expired' })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('op_id', 'is', null)
    .execute();
}

/** Ties the mint operation to the invoice; false when another poller started one first. */
export async function attachInvoiceOp(db: Executor, id: string, opId: number): Promise<boolean> {
  const result = await db
    .updateTable('proxy_lightning_invoices')
    .set({ op_id: opId })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('op_id', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** In the transaction that credits: the invoice of this mint operation is paid. */
export async function markInvoicePaid(db: Executor, opId: number, now: number): Promise<void> {
  await db
    .updateTable('proxy_lightning_invoices')
    .set({ status: 'paid', paid_at: now })
    .where('op_id', '=', opId)
    .where('status', '=', 'pending')
    .execute();
}

export async function insertLightningPayment(db: Executor, row: Insertable<ProxyLightningPaymentsTable>) {
  return db.insertInto('proxy_lightning_payments').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function lightningPaymentByOp(db: Executor, opId: number): Promise<LightningPayment | undefined> {
  return db.selectFrom('proxy_lightning_payments').selectAll().where('op_id', '=', opId).executeTakeFirst();
}

export async function finishLightningPayment(
  db: Executor,
  opId: number,
  outcome: { status: 'paid'; preimage: string | null; fee_paid_msat: number } | { status: 'failed'; error: string },
  now: number,
): Promise<void> {
  await db
    .updateTable('proxy_lightning_payments')
    .set({ ...outcome, updated_at: now })
    .where('op_id', '=', opId)
    .where('status', '=', 'pending')
    .execute();
}

/** The first address an account gives is kept (a later header does not move its refunds). */
export async function setRefundAddress(db: Executor, accountId: number, address: string, now: number) {
  await db
    .insertInto('proxy_refund_addresses')
    .values({ account_id: accountId, address, created_at: now })
    .onConflict((oc) => oc.column('account_id').doNothing())
    .execute();
}

export async function refundAddressOf(db: Executor, accountId: number): Promise<string | null> {
  const row = await db
    .selectFrom('proxy_refund_addresses')
    .select('address')
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row?.address ?? null;
}

/** A withdrawal paid by Lightning ends: what it finally cost the earnings, or failed. */
export async function settleLightningWithdrawal(
  db: Executor,
  id: number,
  outcome: { status: 'issued'; amountMsat: number } | { status: 'failed'; error: string },
): Promise<void> {
  const set =
    outcome.status === 'issued'
      ? { status: outcome.status, amount_msat: outcome.amountMsat }
      : { status: outcome.status, error: outcome.error };
  await db
    .updateTable('proxy_withdrawals')
    .set({ ...set, updated_at: Date.now() })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

// ------------------------------------------------------------------------------------------------
// Lightning refunds claimed before they are prepared, and the refunds of expired keys to their
// Refund-LNURL address (lightning-pay.ts, expiry-refunds.ts; docs/proxy-wallet.md#key-expiry-time).

/**
 * A claimed melt (preparing, its debit taken) becomes pending with its journal and final debit;
 * undefined when it is no longer preparing (the recovery gave the claim back meanwhile).
 */
export async function journalClaimedMelt(
  db: Executor,
  id: number,
  journal: { request: string; debit_msat: number; lease_until: number; updated_at: number },
): Promise<MintOpRow | undefined> {
  return db
    .updateTable('proxy_mint_ops')
    .set({ state: 'pending', ...journal })
    .where('id', '=', id)
    .where('state', '=', 'preparing')
    .returningAll()
    .executeTakeFirst();
}

/** A melt's unused fee reserve went back to the account: its debit is what the payment cost. */
export async function reduceOpDebit(db: Executor, id: number, amountMsat: number): Promise<void> {
  await db
    .updateTable('proxy_mint_ops')
    .set({ debit_msat: sql<number>`debit_msat - ${amountMsat}` })
    .where('id', '=', id)
    .execute();
}

/** A scheduled account the refund job may pay now, with its address, balances and attempts so far. */
export interface ExpiryRefundCandidate {
  accountId: number;
  address: string;
  attempts: number;
  balanceMsat: number;
  availableMsat: number;
}

/** Scheduled accounts due by `now` (expired, not waiting out a backoff), the longest due first, at most `limit`. */
export async function expiryRefundCandidates(
  db: Executor,
  now: number,
  limit: number,
): Promise<ExpiryRefundCandidate[]> {
  const rows = await db
    .selectFrom('proxy_expiry_refunds as e')
    .innerJoin('proxy_accounts as a', 'a.id', 'e.account_id')
    .innerJoin('proxy_refund_addresses as r', 'r.account_id', 'e.account_id')
    .select(['e.account_id', 'e.attempts', 'r.address', 'a.balance_msat', 'a.reserved_msat'])
    .where('e.next_attempt_at', '<=', now)
    .where('a.expires_at', '<=', now)
    .orderBy('e.next_attempt_at')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    accountId: row.account_id,
    address: row.address,
    attempts: row.attempts,
    balanceMsat: row.balance_msat,
    availableMsat: row.balance_msat - row.reserved_msat,
  }));
}

/**
 * Takes an account for one attempt of the job: its row moves to `attempts + 1` and waits until
 * `nextAttemptAt`, conditional on the attempts the candidate was read with and on being due, so
 * of two processes reading the same candidate one takes it. False when another took it first.
 */
export async function takeExpiryRefund(
  db: Executor,
  candidate: ExpiryRefundCandidate,
  nextAttemptAt: number,
  now: number,
): Promise<boolean> {
  const updated = await db
    .updateTable('proxy_expiry_refunds')
    .set({ attempts: candidate.attempts + 1, next_attempt_at: nextAttemptAt, updated_at: now })
    .where('account_id', '=', candidate.accountId)
    .where('attempts', '=', candidate.attempts)
    .where('next_attempt_at', '<=', now)
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) === 1;
}

/** Nothing is left to pay (or the owner took it): the account leaves the schedule. */
export async function unscheduleExpiryRefund(db: Executor, accountId: number, now: number): Promise<void> {
  await db
    .deleteFrom('proxy_expiry_refunds')
    .where('account_id', '=', accountId)
    .where('next_attempt_at', '<=', now)
    .execute();
}

/** What went wrong with the account's last attempt (its backoff was set when it was taken). */
export async function noteExpiryRefundError(db: Executor, accountId: number, error: string, now: number) {
  await db
    .updateTable('proxy_expiry_refunds')
    .set({ last_error: error, updated_at: now })
    .where('account_id', '=', accountId)
    .execute();
}

/**
 * The account's balance left by Lightning (paid, or pending with the recovery): the attempts start
 * again from zero. The row stays, waiting until the time its taking set, so a process that read the
 * account before it was taken cannot take it again (what the unused fee reserve gave back is paid
 * on a later pass).
 */
export async function expiryRefundSettled(db: Executor, accountId: number, now: number): Promise<void> {
  await db
    .updateTable('proxy_expiry_refunds')
    .set({ attempts: 0, last_error: null, updated_at: now })
    .where('account_id', '=', accountId)
    .execute();
}
