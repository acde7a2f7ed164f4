// SQL of the proxy node: accounts and their refunds, the wallet's journal of mint operations,
// the admin page, the proofs the node holds. Every balance change is one conditional statement,
// so it is atomic on SQLite and PostgreSQL alike and never a read-modify-write in JavaScript.
import { sql, type Insertable, type Selectable } from 'kysely';
import type { Executor } from '../db/index.js';
import { prepared, type Params } from '../db/prepared.js';
import type {
  ProxyAccountsTable,
  ProxyAdminSessionsTable,
  ProxyMintOpsTable,
  ProxyProofsTable,
  ProxyWithdrawalsTable,
} from './tables.js';

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
    id: row.id,
    keyHash: row.key_hash,
    keyPrefix: row.key_prefix,
    balanceMsat: row.balance_msat,
    reservedMsat: row.reserved_msat,
    totalSpentMsat: row.total_spent_msat,
    totalRequests: row.total_requests,
    mintUrl: row.mint_url,
    unit: row.unit,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
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
  const keepsOneMint = sql<boolean>`balance_msat = 0 or (mint_url = ${from.mintUrl} and unit = ${from.unit})`;
  const result = await db
    .updateTable('proxy_accounts')
    .set({
      balance_msat: sql<number>`balance_msat + ${amountMsat}`,
      mint_url: sql<string>`case when ${keepsOneMint} then ${from.mintUrl} else ${primaryMint} end`,
      unit: sql<string>`case when ${keepsOneMint} then ${from.unit} else 'sat' end`,
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
  if (existing) return creditAccount(db, existing.id, amountMsat, from, primaryMint, now);
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

/** A mint operation as stored (the wallet's journal entry). */
export type MintOpRow = Selectable<ProxyMintOpsTable>;

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
  return row?.count ?? 0;
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

// --- The wallet's journal of mint operations (proxy_mint_ops, proxy_op_inputs) --------------
// Every state change is conditional on the state it leaves, so that whichever process settles
// an operation first wins and the others see that they lost (docs/proxy-wallet.md).

export async function insertMintOp(db: Executor, values: Insertable<ProxyMintOpsTable>): Promise<MintOpRow> {
  return db.insertInto('proxy_mint_ops').values(values).returningAll().executeTakeFirstOrThrow();
}

/** Claims the token's proofs (by Y) for a redemption; returns how many it got (the others are taken). */
export async function claimOpInputs(db: Executor, opId: number, ys: string[]): Promise<number> {
  const claimed = await db
    .insertInto('proxy_op_inputs')
    // In a fixed order, so two transactions claiming overlapping proofs cannot deadlock.
    .values([...ys].sort().map((y) => ({ y, op_id: opId })))
    .onConflict((oc) => oc.column('y').doNothing())
    .returning('y')
    .execute();
  return claimed.length;
}

/** The newest operation holding any of these proofs. */
export async function opHoldingProofs(db: Executor, ys: string[]): Promise<MintOpRow | undefined> {
  return db
    .selectFrom('proxy_op_inputs')
    .innerJoin('proxy_mint_ops', 'proxy_mint_ops.id', 'proxy_op_inputs.op_id')
    .selectAll('proxy_mint_ops')
    .where('proxy_op_inputs.y', 'in', ys)
    .orderBy('proxy_mint_ops.id', 'desc')
    .executeTakeFirst();
}

export async function mintOpById(db: Executor, id: number): Promise<MintOpRow> {
  return db.selectFrom('proxy_mint_ops').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** Unfinished operations whose lease ran out by `now`, oldest first. */
export async function unfinishedOps(db: Executor, now: number, limit: number): Promise<MintOpRow[]> {
  return db
    .selectFrom('proxy_mint_ops')
    .selectAll()
    .where('state', 'in', ['preparing', 'pending'])
    .where('lease_until', '<=', now)
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** Takes an unfinished operation whose lease ran out; undefined when someone else holds or ended it. */
export async function claimOp(
  db: Executor,
  id: number,
  leaseUntil: number,
  now: number,
): Promise<MintOpRow | undefined> {
  return db
    .updateTable('proxy_mint_ops')
    .set({ lease_until: leaseUntil, attempts: sql<number>`attempts + 1`, updated_at: now })
    .where('id', '=', id)
    .where('state', 'in', ['preparing', 'pending'])
    .where('lease_until', '<=', now)
    .returningAll()
    .executeTakeFirst();
}

/** A preparing issue becomes pending with its journal; undefined when it is no longer preparing. */
export async function journalIssue(
  db: Executor,
  id: number,
  journal: { request: string; lease_until: number; updated_at: number },
): Promise<MintOpRow | undefined> {
  return db
    .updateTable('proxy_mint_ops')
    .set({ state: 'pending', ...journal })
    .where('id', '=', id)
    .where('state', '=', 'preparing')
    .returningAll()
    .executeTakeFirst();
}

export async function markMaybeSwapped(db: Executor, id: number): Promise<void> {
  await db
    .updateTable('proxy_mint_ops')
    .set({ maybe_swapped: 1 })
    .where('id', '=', id)
    .where('state', '=', 'pending')
    .execute();
}

/** Lets go of a pending operation (lease 0: the recovery may take it at once) with what went wrong. */
export async function leaveOpPending(
  db: Executor,
  id: number,
  error: string,
  maybeSwapped: number,
  now: number,
): Promise<void> {
  await db
    .updateTable('proxy_mint_ops')
    .set({ lease_until: 0, error, maybe_swapped: maybeSwapped, updated_at: now })
    .where('id', '=', id)
    .where('state', '=', 'pending')
    .execute();
}

/** Marks a pending operation done; false when someone else settled it first. */
export async function markOpDone(db: Executor, id: number, result: string | null, now: number): Promise<boolean> {
  const marked = await db
    .updateTable('proxy_mint_ops')
    .set({ state: 'done', result, error: null, updated_at: now })
    .where('id', '=', id)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return Number(marked.numUpdatedRows) === 1;
}

/** Marks an unfinished operation failed; false when someone else settled it first. */
export async function markOpFailed(db: Executor, id: number, reason: string, now: number): Promise<boolean> {
  const marked = await db
    .updateTable('proxy_mint_ops')
    .set({ state: 'failed', error: reason, updated_at: now })
    .where('id', '=', id)
    .where('state', 'in', ['preparing', 'pending'])
    .executeTakeFirst();
  return Number(marked.numUpdatedRows) === 1;
}

/** Lets go of a failed redemption's token proofs, so that the token can be redeemed again. */
export async function releaseOpInputs(db: Executor, opId: number): Promise<void> {
  await db.deleteFrom('proxy_op_inputs').where('op_id', '=', opId).execute();
}

// --- The admin page: node totals, recent rows, withdrawals of earnings, sessions -------------
// Sums are cast to bigint in SQL: PostgreSQL's sum() of a bigint is numeric (a string to pg),
// while a bigint arrives as a number (src/db/index.ts).

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

/** Written as a literal, so the partial index of live reservations (migration 2102) serves it. */
const STILL_RESERVED = sql<boolean>`status = 'reserved'`;

export async function countLiveReservations(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('proxy_requests')
    .select(sql<number>`count(*)`.as('count'))
    .where(STILL_RESERVED)
    .executeTakeFirstOrThrow();
  return row.count;
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

/** The proofs the node holds, per mint and unit (spent ones left out). */
export async function mintHoldings(db: Executor) {
  return db
    .selectFrom('proxy_proofs')
    .select([
      'mint_url',
      'unit',
      sql<number>`cast(coalesce(sum(case when state = 'unspent' then amount else 0 end), 0) as bigint)`.as('unspent'),
      sql<number>`cast(coalesce(sum(case when state = 'reserved' then amount else 0 end), 0) as bigint)`.as('reserved'),
      sql<number>`cast(sum(case when state = 'unspent' then 1 else 0 end) as bigint)`.as('proofs'),
    ])
    .where('state', '!=', 'spent')
    .groupBy(['mint_url', 'unit'])
    .orderBy('mint_url')
    .execute();
}

/** The most recently used accounts. */
export async function recentAccounts(db: Executor, limit: number) {
  return db
    .selectFrom('proxy_accounts')
    .select([
      'id',
      'key_prefix',
      'balance_msat',
      'reserved_msat',
      'total_spent_msat',
      'total_requests',
      'mint_url',
      'unit',
      'created_at',
      'last_used_at',
    ])
    .orderBy(sql`coalesce(last_used_at, created_at)`, 'desc')
    .limit(limit)
    .execute();
}

/** The latest billed requests with their account's key prefix. */
export async function recentRequests(db: Executor, limit: number) {
  return db
    .selectFrom('proxy_requests as r')
    .leftJoin('proxy_accounts as a', 'a.id', 'r.account_id')
    .selectAll('r')
    .select('a.key_prefix')
    .orderBy('r.id', 'desc')
    .limit(limit)
    .execute();
}

export async function recentWithdrawals(db: Executor, limit: number) {
  return db.selectFrom('proxy_withdrawals').selectAll().orderBy('id', 'desc').limit(limit).execute();
}

export async function insertWithdrawal(db: Executor, values: Insertable<ProxyWithdrawalsTable>): Promise<number> {
  const row = await db.insertInto('proxy_withdrawals').values(values).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

export async function finishWithdrawal(
  db: Executor,
  id: number,
  outcome: { status: 'issued'; token: string } | { status: 'failed'; error: string },
  now: number,
): Promise<void> {
  await db
    .updateTable('proxy_withdrawals')
    .set({ ...outcome, updated_at: now })
    .where('id', '=', id)
    .execute();
}

export async function insertAdminSession(db: Executor, session: ProxyAdminSessionsTable): Promise<void> {
  await db.insertInto('proxy_admin_sessions').values(session).execute();
}

export async function deleteExpiredAdminSessions(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('proxy_admin_sessions').where('expires_at', '<', now).execute();
}

export async function adminSessionByIdHash(db: Executor, idHash: string) {
  return db
    .selectFrom('proxy_admin_sessions')
    .select(['principal', 'csrf_token', 'expires_at'])
    .where('id_hash', '=', idHash)
    .executeTakeFirst();
}

export async function deleteAdminSession(db: Executor, idHash: string): Promise<void> {
  await db.deleteFrom('proxy_admin_sessions').where('id_hash', '=', idHash).execute();
}

// --- The proofs the node holds (proxy_proofs) ------------------------------------------------

export type ProofRow = Selectable<ProxyProofsTable>;

/** The unspent proofs of a mint and unit, largest first. */
export async function unspentProofs(db: Executor, mintUrl: string, unit: string, limit: number): Promise<ProofRow[]> {
  return db
    .selectFrom('proxy_proofs')
    .selectAll()
    .where('mint_url', '=', mintUrl)
    .where('unit', '=', unit)
    .where('state', '=', 'unspent')
    .orderBy('amount', 'desc')
    .limit(limit)
    .execute();
}

/** Reserves unspent proofs as an issue's inputs; returns how many it got. */
export async function reserveProofs(db: Executor, ids: number[], opId: number): Promise<number> {
  const reserved = await db
    .updateTable('proxy_proofs')
    .set({ state: 'reserved', spend_op_id: opId })
    .where('id', 'in', ids)
    .where('state', '=', 'unspent')
    .executeTakeFirst();
  return Number(reserved.numUpdatedRows);
}

export async function insertProofs(db: Executor, proofs: Insertable<ProxyProofsTable>[]): Promise<void> {
  if (proofs.length) await db.insertInto('proxy_proofs').values(proofs).execute();
}

/** An issue's inputs, once its swap is done, are spent. */
export async function markOpInputsSpent(db: Executor, opId: number): Promise<void> {
  await db.updateTable('proxy_proofs').set({ state: 'spent' }).where('spend_op_id', '=', opId).execute();
}

/** A failed issue's reserved inputs: spent (the mint took them) or unspent again. */
export async function releaseReservedProofs(db: Executor, opId: number, spent: boolean): Promise<void> {
  await db
    .updateTable('proxy_proofs')
    .set(spent ? { state: 'spent' } : { state: 'unspent', spend_op_id: null })
    .where('spend_op_id', '=', opId)
    .where('state', '=', 'reserved')
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
