// SQL of the proxy's accounts. Every balance change is one conditional statement, so it is
// atomic on SQLite and PostgreSQL alike and never a read-modify-write in JavaScript.
import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Executor } from '../db/index.js';
import { prepared, type Params } from '../db/prepared.js';
import type { ProxyAccountsTable, ProxyMintOpsTable } from './tables.js';

export type { Executor };

/** An account row in camelCase. */
export interface Account {
  id: number;
  keyHash: string;
  keyPrefix: string | null;
  balanceMsat: number;
  reservedMsat: number;
  totalSpentMsat: number;
  totalRequests: number;
  mintUrl: string;
  unit: string;
  createdAt: number;
  lastUsedAt: number | null;
}

export function toAccount(row: Selectable<ProxyAccountsTable>): Account {
  return {
    id: Number(row.id),
    keyHash: row.key_hash,
    keyPrefix: row.key_prefix,
    balanceMsat: Number(row.balance_msat),
    reservedMsat: Number(row.reserved_msat),
    totalSpentMsat: Number(row.total_spent_msat),
    totalRequests: Number(row.total_requests),
    mintUrl: row.mint_url,
    unit: row.unit,
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}

// Every request with a key runs this one: prepared (../db/prepared.ts).
const byKeyHash = prepared((p: Params<{ keyHash: string }>, db) =>
  db.selectFrom('proxy_accounts').selectAll().where('key_hash', '=', p.keyHash),
);

export async function accountByKeyHash(db: Executor, keyHash: string): Promise<Account | null> {
  const { rows } = await byKeyHash.run(db, { keyHash });
  return rows.length ? toAccount(rows[0]) : null;
}

export async function accountById(db: Executor, id: number): Promise<Account | null> {
  const row = await db.selectFrom('proxy_accounts').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toAccount(row) : null;
}

/**
 * Adds a redemption's proceeds to an account. The account keeps its mint while its money comes
 * from one mint and unit; once it mixes (a top-up from another mint into a non-empty balance),
 * its refunds go to `primaryMint` in sat.
 */
export async function creditAccount(
  db: Executor,
  accountId: number,
  amountMsat: number,
  from: { mintUrl: string; unit: string },
  primaryMint: string,
  now: number,
): Promise<void> {
  const result = await db
    .updateTable('proxy_accounts')
    .set({
      balance_msat: sql<number>`balance_msat + ${amountMsat}`,
      mint_url: sql<string>`case when balance_msat = 0 or (mint_url = ${from.mintUrl} and unit = ${from.unit}) then ${from.mintUrl} else ${primaryMint} end`,
      unit: sql<string>`case when balance_msat = 0 or (mint_url = ${from.mintUrl} and unit = ${from.unit}) then ${from.unit} else 'sat' end`,
      last_used_at: now,
    })
    .where('id', '=', accountId)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) throw new Error(`account ${accountId} to credit does not exist`);
}

/**
 * Creates the account a Cashu token names when used as a bearer key, funded with the token's
 * proceeds. If it already exists (it cannot, as a token redeems once, but be safe) it is credited.
 */
export async function createFundedAccount(
  db: Executor,
  keyHash: string,
  keyPrefix: string | null,
  amountMsat: number,
  from: { mintUrl: string; unit: string },
  primaryMint: string,
  now: number,
): Promise<void> {
  const existing = await db
    .selectFrom('proxy_accounts')
    .select('id')
    .where('key_hash', '=', keyHash)
    .executeTakeFirst();
  if (existing) return creditAccount(db, Number(existing.id), amountMsat, from, primaryMint, now);
  await db
    .insertInto('proxy_accounts')
    .values({
      key_hash: keyHash,
      key_prefix: keyPrefix,
      balance_msat: amountMsat,
      mint_url: from.mintUrl,
      unit: from.unit,
      created_at: now,
      last_used_at: now,
    })
    .execute();
}

/** Takes `amountMsat` from the available balance; false when it is not available. */
export async function debitAvailable(
  db: Executor,
  accountId: number,
  amountMsat: number,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('proxy_accounts')
    .set({ balance_msat: sql<number>`balance_msat - ${amountMsat}`, last_used_at: now })
    .where('id', '=', accountId)
    .where(sql<boolean>`balance_msat - reserved_msat >= ${amountMsat}`)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Gives back a debit whose purpose failed. */
export async function restoreDebit(db: Executor, accountId: number, amountMsat: number): Promise<void> {
  await db
    .updateTable('proxy_accounts')
    .set({ balance_msat: sql<number>`balance_msat + ${amountMsat}` })
    .where('id', '=', accountId)
    .execute();
}

// Refund tokens of an account (issue operations debited from it, purpose refund).

const refundsOf = (db: Executor, accountId: number) =>
  db
    .selectFrom('proxy_mint_ops')
    .selectAll()
    .where('debit_account_id', '=', accountId)
    .where('kind', '=', 'issue')
    .where('purpose', '=', 'refund');

/** Finished refund tokens no refund answer has carried yet. */
const unclaimed = (db: Executor, accountId: number) =>
  refundsOf(db, accountId).where('state', '=', 'done').where('claimed_at', 'is', null);

type MintOpRow = Selectable<ProxyMintOpsTable>;

/** The account's refunds that took money (not failed), newest first: `limit` of them before id `before`. */
export async function refundOps(db: Executor, accountId: number, page: { before?: number; limit: number }) {
  let query = refundsOf(db, accountId).where('state', '!=', 'failed');
  if (page.before !== undefined) query = query.where('id', '<', page.before);
  return query.orderBy('id', 'desc').limit(page.limit).execute();
}

/** The oldest refund token that is finished but no refund answer has carried yet. */
export async function oldestUnclaimedRefund(db: Executor, accountId: number): Promise<MintOpRow | undefined> {
  return unclaimed(db, accountId).orderBy('id').limit(1).executeTakeFirst();
}

export async function countUnclaimedRefunds(db: Executor, accountId: number): Promise<number> {
  const row = await unclaimed(db, accountId)
    .clearSelect()
    .select(sql<number>`count(*)`.as('count'))
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}

/** Records that a refund answer carried this token (the first time only). */
export async function markRefundClaimed(db: Executor, opId: number, now: number): Promise<void> {
  await db
    .updateTable('proxy_mint_ops')
    .set({ claimed_at: now })
    .where('id', '=', opId)
    .where('claimed_at', 'is', null)
    .execute();
}

/** Whether in-flight swaps at this mint hold proofs of this unit (their change comes back when they end). */
export async function proofsHeldInFlight(db: Executor, mintUrl: string, unit: string): Promise<boolean> {
  const row = await db
    .selectFrom('proxy_proofs')
    .select('id')
    .where('mint_url', '=', mintUrl)
    .where('unit', '=', unit)
    .where('state', '=', 'reserved')
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

// ------------------------------------------------------------------------------------------------
// Billing: reservations and settlements of forwarded requests (billing.ts, docs/proxy-billing.md).

/** balance - reserved of an account; null when there is no such account. */
export async function availableMsat(db: Executor, accountId: number): Promise<number | null> {
  const row = await db
    .selectFrom('proxy_accounts')
    .select(['balance_msat', 'reserved_msat'])
    .where('id', '=', accountId)
    .executeTakeFirst();
  return row ? row.balance_msat - row.reserved_msat : null;
}
