// SQL of the proxy node: accounts and their refunds, the wallet's journal of mint operations,
// the admin page, the proofs the node holds, and billing. Every balance change is one conditional
// statement, so it is atomic on SQLite and PostgreSQL alike and never a read-modify-write in JavaScript.
import { CompiledQuery, sql, type Insertable, type Selectable } from 'kysely';
import { columnsOf, insertRows, updateRows, type Column, type SetColumn } from '../db/bulk.js';
import type { Dialect, Executor } from '../db/index.js';
import { namedStatement } from '../db/named.js';
import type { BillingStep, HeldResult } from './billing.js';
import { prepared, type Params } from '../db/prepared.js';
import { periodStartOf } from './key-periods.js';
import type {
  MintOpKind,
  ProxyAccountsTable,
  ProxyAdminSessionsTable,
  ProxyChildKeysTable,
  ProxyLightningInvoicesTable,
  ProxyLightningPaymentsTable,
  ProxyMintOpsTable,
  ProxyProofsTable,
  ProxyWithdrawalsTable,
  ResetPeriod,
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
  /** Key-Expiry-Time in ms (null: never expires). */
  expiresAt: number | null;
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
    expiresAt: row.expires_at ?? null,
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

/** Unfinished operations of these kinds whose lease ran out by `now`, oldest first. */
export async function unfinishedOps(
  db: Executor,
  now: number,
  limit: number,
  kinds: MintOpKind[] = ['redeem', 'issue'],
): Promise<MintOpRow[]> {
  return db
    .selectFrom('proxy_mint_ops')
    .selectAll()
    .where('kind', 'in', kinds)
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
const LIVE_RESERVATION = sql<boolean>`status = 'reserved'`;

export async function countLiveReservations(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('proxy_requests')
    .select(sql<number>`count(*)`.as('count'))
    .where(LIVE_RESERVATION)
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

/**
 * Whether change may yet cover what a read of the pool (`read`, by unspentProofs with `limit`)
 * lacked: another operation holds proofs in flight, whose change comes back when it ends; or one
 * ended since the read (on PostgreSQL each statement sees its own snapshot: its change inserted and
 * its inputs freed between the read and the look for proofs in flight), which the pool read again shows.
 */
export async function changeMayComeBack(
  db: Executor,
  mintUrl: string,
  unit: string,
  read: ProofRow[],
  limit: number,
): Promise<boolean> {
  const inFlight = await db
    .selectFrom('proxy_proofs')
    .select('id')
    .where('mint_url', '=', mintUrl)
    .where('unit', '=', unit)
    .where('state', '=', 'reserved')
    .limit(1)
    .executeTakeFirst();
  if (inFlight) return true;
  const total = (proofs: ProofRow[]) => proofs.reduce((sum, proof) => sum + proof.amount, 0);
  return total(await unspentProofs(db, mintUrl, unit, limit)) > total(read);
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

/** What a shared transaction changes on one account: sums of its steps. */
interface AccountChange {
  /** balance - reserved as read under the lock, then as the steps leave it. */
  available: number;
  /** Key-Expiry-Time (ms): no new reservation from then on. */
  expiresAt: number | null;
  reserved: number;
  balance: number;
  spent: number;
  requests: number;
  usedAt: number | null;
}

const REQUEST_KEY: [Column<'proxy_requests'>] = [{ name: 'id', type: 'bigint' }];
const ACCOUNT_KEY: [Column<'proxy_accounts'>] = [{ name: 'id', type: 'bigint' }];
const SETTLED_COLUMNS = columnsOf('proxy_requests', {
  status: 'text',
  // What the settlement drew beside the reservation is added to it: the row's charge stays within it.
  reserved_msat: 'bigint',
  charged_msat: 'bigint',
  cost_msat: 'bigint',
  input_msat: 'bigint',
  output_msat: 'bigint',
  prompt_tokens: 'bigint',
  completion_tokens: 'bigint',
  usage_source: 'text',
  upstream_status: 'integer',
  settled_at: 'bigint',
});
const ACCOUNT_CHANGE_COLUMNS: SetColumn<'proxy_accounts'>[] = [
  ...columnsOf('proxy_accounts', {
    reserved_msat: 'bigint',
    balance_msat: 'bigint',
    total_spent_msat: 'bigint',
    total_requests: 'bigint',
  }).map((column) => ({ ...column, combine: 'add' as const })),
  { name: 'last_used_at', type: 'bigint', combine: 'unless-null' },
];
const RESERVATION_COLUMNS = columnsOf('proxy_requests', {
  account_id: 'bigint',
  request_id: 'text',
  path: 'text',
  model: 'text',
  stream: 'integer',
  payment: 'text',
  status: 'text',
  reserved_msat: 'bigint',
  created_at: 'bigint',
  heartbeat_at: 'bigint',
  child_key_id: 'bigint',
});
const STILL_RESERVED = `t."status" = 'reserved'`;
// The same text for any number of accounts (SQLite reuses its prepared statement). On SQLite the
// transaction already holds the write lock (begin immediate).
const LOCK_ACCOUNTS_POSTGRES =
  'select "id", "balance_msat", "reserved_msat", "expires_at" from "proxy_accounts" ' +
  'where "id" = any($1::bigint[]) order by "id" for update';
const LOCK_ACCOUNTS_SQLITE =
  'select "id", "balance_msat", "reserved_msat", "expires_at" from "proxy_accounts" ' +
  'where "id" in (select value from json_each(?)) order by "id"';

/**
 * The steps of one shared transaction, set-wise: the accounts they touch are locked and read once
 * (in ascending id order, so two transactions never wait on each other in a cycle), the ledger
 * rows change in one statement per kind, and each account gets one update with the sum of its
 * steps. On PostgreSQL every statement is a round trip: a transaction holds its accounts' row
 * locks for four of them whatever its size. Their results in order.
 */
export async function applyBillingSteps(trx: Executor, dialect: Dialect, steps: BillingStep[]): Promise<unknown[]> {
  const results: unknown[] = new Array(steps.length).fill(null);

  // 1. Lock the accounts, in ascending id order, and read what each has available.
  const accountIds = [...new Set(steps.map((step) => step.accountId))].sort((a, b) => a - b);
  const read =
    dialect === 'postgres'
      ? CompiledQuery.raw(LOCK_ACCOUNTS_POSTGRES, [accountIds])
      : CompiledQuery.raw(LOCK_ACCOUNTS_SQLITE, [JSON.stringify(accountIds)]);
  const accounts = new Map<number, AccountChange>();
  type LockedAccount = { id: number; balance_msat: number; reserved_msat: number; expires_at: number | null };
  for (const row of (await trx.executeQuery<LockedAccount>(read)).rows) {
    accounts.set(row.id, {
      available: row.balance_msat - row.reserved_msat,
      expiresAt: row.expires_at,
      reserved: 0,
      balance: 0,
      spent: 0,
      requests: 0,
      usedAt: null,
    });
  }

  // The child keys the steps name, locked after their parents (whose locks every writer of a
  // child's counters here holds first).
  const children = await lockChildKeys(trx, dialect, steps);

  // 2. Settle and release ledger rows still reserved; what they held becomes available again. A
  // charge above its reservation takes what the account has available besides, never more (the
  // settles of a batch in order; one whose row was no longer reserved takes nothing).
  const settles = steps.flatMap((step, i) => (step.kind === 'settle' ? [{ step, i, charged: 0, extra: 0 }] : []));
  if (settles.length) {
    const spare = new Map([...accounts].map(([id, account]) => [id, Math.max(0, account.available)]));
    // A child key's charge above its reservation also stays within what its limit leaves.
    const childSpare = new Map([...children].map(([id, child]) => [id, childHeadroom(child)]));
    for (const settle of settles) {
      const { step } = settle;
      const child = step.childKeyId ?? null;
      settle.extra = Math.min(
        Math.max(0, step.wanted - step.reservedMsat),
        spare.get(step.accountId) ?? 0,
        child === null ? Infinity : Math.max(0, childSpare.get(child) ?? 0),
      );
      spare.set(step.accountId, (spare.get(step.accountId) ?? 0) - settle.extra);
      if (child !== null) childSpare.set(child, (childSpare.get(child) ?? 0) - settle.extra);
      settle.charged = Math.min(step.wanted, step.reservedMsat) + settle.extra;
    }
    const values = settles.flatMap(({ step, charged, extra }) => [
      step.id,
      'settled',
      step.reservedMsat + extra,
      charged,
      step.cost.totalMsat,
      step.cost.inputMsat,
      step.cost.outputMsat,
      step.usage.promptTokens,
      step.usage.completionTokens,
      step.usageSource,
      step.upstreamStatus,
      step.now,
    ]);
    // Only rows still reserved, with the amount their reservation was made for.
    const rows = await updateRows(trx, dialect, 'proxy_requests', REQUEST_KEY, SETTLED_COLUMNS, values, {
      where: STILL_RESERVED,
      returning: ['id'],
    });
    const settled = new Set(rows.map((row) => row.id));
    for (const { step, i, charged } of settles) {
      const account = accounts.get(step.accountId);
      results[i] = settled.has(step.id) && account !== undefined ? charged : null;
      if (!settled.has(step.id) || !account) continue;
      const reserved = step.reservedMsat;
      account.reserved -= reserved;
      account.balance -= charged;
      account.spent += charged;
      account.requests += 1;
      account.available += reserved - charged;
      account.usedAt = step.now;
      const child = childOf(children, step.childKeyId, step.id);
      if (child) {
        child.reserved -= reserved;
        child.periodSpent += charged;
        child.totalSpent += charged;
        child.requests += 1;
        child.usedAt = step.now;
      }
    }
  }
  for (const [i, step] of steps.entries()) {
    if (step.kind !== 'finish') continue;
    let update = trx
      .updateTable('proxy_requests')
      .set({
        status: step.status,
        error: step.reason.slice(0, 500),
        upstream_status: step.upstreamStatus,
        settled_at: step.now,
      })
      .where('id', '=', step.id)
      .where('account_id', '=', step.accountId)
      .where('status', '=', 'reserved');
    if (step.staleBefore !== undefined) update = update.where('heartbeat_at', '<', step.staleBefore);
    const row = await update.returning(['reserved_msat', 'child_key_id']).executeTakeFirst();
    const account = accounts.get(step.accountId);
    results[i] = row !== undefined && account !== undefined;
    if (!row || !account) continue;
    account.reserved -= row.reserved_msat;
    account.available += row.reserved_msat;
    const child = childOf(children, row.child_key_id, step.id);
    if (child) child.reserved -= row.reserved_msat;
  }

  // 3. Hold new reservations, in the order they came, from what is available now.
  const holds: { step: BillingStep & { kind: 'reserve' }; i: number; amount: number }[] = [];
  for (const [i, step] of steps.entries()) {
    if (step.kind !== 'reserve') continue;
    const account = accounts.get(step.accountId);
    const available = account ? Math.max(0, account.available) : null;
    const childId = step.request.childKeyId ?? null;
    const child = childId === null ? undefined : children.get(childId);
    // A child key offers its parent's available balance, at most what its limit leaves.
    const limitMsat = child && child.limit !== null ? Math.max(0, childHeadroom(child)) : null;
    const refusal = !account
      ? null
      : account.expiresAt !== null && account.expiresAt <= step.now
        ? 'expired'
        : childId === null
          ? null
          : !child || child.parentId !== step.accountId || child.revokedAt !== null
            ? 'revoked'
            : child.expiresAt !== null && child.expiresAt <= step.now
              ? 'expired'
              : null;
    results[i] = { id: null, amountMsat: 0, availableMsat: available, limitMsat, refusal } satisfies HeldResult;
    if (!account || refusal) continue;
    const offered = limitMsat === null ? account.available : Math.min(account.available, limitMsat);
    const amount = step.request.amountFor(offered);
    if (amount === null || !Number.isSafeInteger(amount) || amount <= 0 || amount > offered) continue;
    account.available -= amount;
    account.reserved += amount;
    account.usedAt = step.now;
    if (child) {
      child.reserved += amount;
      child.usedAt = step.now;
    }
    holds.push({ step, i, amount });
  }

  // 4. One update per account with the sums.
  const changes = [...accounts].filter(
    ([, c]) => c.reserved || c.balance || c.spent || c.requests || c.usedAt !== null,
  );
  if (changes.length) {
    const values = changes.flatMap(([id, c]) => [id, c.reserved, c.balance, c.spent, c.requests, c.usedAt]);
    await updateRows(trx, dialect, 'proxy_accounts', ACCOUNT_KEY, ACCOUNT_CHANGE_COLUMNS, values);
  }
  await writeChildKeys(trx, dialect, children);

  // 5. The ledger rows of the new reservations. A multi-row insert numbers its rows in order, so
  // the returned ids sorted are the holds' ids in order; each row's account and amount confirm
  // it (a caller may choose its request id, so two holds can share one).
  if (holds.length) {
    const values = holds.flatMap(({ step, amount }) => {
      const r = step.request;
      return [
        r.accountId,
        r.requestId,
        r.path,
        r.model,
        r.stream ? 1 : 0,
        r.payment,
        'reserved',
        amount,
        step.now,
        step.now,
        r.childKeyId ?? null,
      ];
    });
    const rows = await insertRows(trx, dialect, 'proxy_requests', RESERVATION_COLUMNS, values, [
      'id',
      'request_id',
      'account_id',
      'reserved_msat',
    ]);
    rows.sort((a, b) => a.id - b.id);
    const matches = (row: (typeof rows)[number], hold: (typeof holds)[number]) =>
      row.request_id === hold.step.request.requestId &&
      row.account_id === hold.step.accountId &&
      row.reserved_msat === hold.amount;
    if (rows.length !== holds.length || rows.some((row, k) => !matches(row, holds[k]))) {
      throw new Error('the ledger rows of new reservations came back in an unexpected order');
    }
    holds.forEach(({ i, amount }, k) => {
      const refused = results[i] as HeldResult;
      results[i] = { ...refused, id: rows[k].id, amountMsat: amount } satisfies HeldResult;
    });
  }
  return results;
}

// One batch in one statement on PostgreSQL: proxy_bill_steps (migration 2140) does what
// applyBillingSteps does in a transaction, in one round trip instead of six (bench/README.md,
// "Group commit of billing"). Its parameters, in its order, with their types.
const BILL_STEP_TYPES = [
  // the accounts
  'bigint',
  // settles: id, account, reserved, charged, cost, input, output, prompt, completion, source, upstream, now
  ...['bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'text', 'integer'],
  'bigint',
  // finishes: id, account, status, error, upstream, stale before, now
  ...['bigint', 'bigint', 'text', 'text', 'integer', 'bigint', 'bigint'],
  // holds: account, request id, path, model, stream, payment, amount, now
  ...['bigint', 'text', 'text', 'text', 'integer', 'text', 'bigint', 'bigint'],
];
const BILL_STEPS = namedStatement(
  `select * from proxy_bill_steps(${BILL_STEP_TYPES.map((type, i) => `$${i + 1}::${type}[]`)})`,
);
/** Raised by proxy_bill_steps when a planned reservation does not fit: nothing of the batch is kept. */
const DOES_NOT_FIT = 'QB001';

interface BilledAtOnce {
  settled: number[];
  finished: number[];
  held: number[];
  available: (number | null)[];
  refusal: ('expired' | null)[];
}

/**
 * The steps of a batch in one statement on PostgreSQL (its own transaction), with the results
 * applyBillingSteps would give; null when they need that transaction: a child key, a charge above
 * its reservation (it draws on what is available), a reservation whose amount depends on the
 * balance, or one that does not fit what the account has available (then nothing was written).
 * Each reservation is planned for a balance that affords it; the function takes it only if the
 * account has that much available under its lock, so the plan is the one the transaction would make.
 */
export async function applyBillingStepsAtOnce(db: Executor, steps: BillingStep[]): Promise<unknown[] | null> {
  const accounts = new Set<number>();
  const ledgerIds = new Set<number>();
  const settles: (BillingStep & { kind: 'settle' })[] = [];
  const finishes: (BillingStep & { kind: 'finish' })[] = [];
  const holds: { step: BillingStep & { kind: 'reserve' }; amount: number }[] = [];
  for (const step of steps) {
    accounts.add(step.accountId);
    if (step.kind === 'reserve') {
      if (step.request.childKeyId !== null && step.request.childKeyId !== undefined) return null;
      const amount = step.request.amountFor(Number.MAX_SAFE_INTEGER);
      if (amount === null || !Number.isSafeInteger(amount) || amount <= 0) return null;
      holds.push({ step, amount });
      continue;
    }
    if (step.childKeyId !== null || ledgerIds.has(step.id)) return null;
    ledgerIds.add(step.id);
    if (step.kind === 'finish') finishes.push(step);
    else if (step.wanted <= step.reservedMsat) settles.push(step);
    else return null;
  }
  const column = <T, V>(rows: T[], value: (row: T) => V) => rows.map(value);
  const parameters = [
    [...accounts],
    column(settles, (s) => s.id),
    column(settles, (s) => s.accountId),
    column(settles, (s) => s.reservedMsat),
    column(settles, (s) => s.wanted),
    column(settles, (s) => s.cost.totalMsat),
    column(settles, (s) => s.cost.inputMsat),
    column(settles, (s) => s.cost.outputMsat),
    column(settles, (s) => s.usage.promptTokens),
    column(settles, (s) => s.usage.completionTokens),
    column(settles, (s) => s.usageSource),
    column(settles, (s) => s.upstreamStatus),
    column(settles, (s) => s.now),
    column(finishes, (f) => f.id),
    column(finishes, (f) => f.accountId),
    column(finishes, (f) => f.status),
    column(finishes, (f) => f.reason.slice(0, 500)),
    column(finishes, (f) => f.upstreamStatus),
    column(finishes, (f) => f.staleBefore ?? null),
    column(finishes, (f) => f.now),
    column(holds, (h) => h.step.accountId),
    column(holds, (h) => h.step.request.requestId),
    column(holds, (h) => h.step.request.path),
    column(holds, (h) => h.step.request.model),
    column(holds, (h) => (h.step.request.stream ? 1 : 0)),
    column(holds, (h) => h.step.request.payment),
    column(holds, (h) => h.amount),
    column(holds, (h) => h.step.now),
  ];
  let row: BilledAtOnce;
  try {
    row = (await db.executeQuery<BilledAtOnce>(CompiledQuery.raw(BILL_STEPS, parameters))).rows[0];
  } catch (error) {
    if ((error as { code?: unknown }).code === DOES_NOT_FIT) return null;
    throw error;
  }
  // pg reads a bigint[] as strings (only a single bigint is parsed to a number, in ../db/index.ts).
  const numbers = (list: unknown[]) => list.map((value) => (value === null ? null : Number(value)));
  const billed = { ...row, held: numbers(row.held) as number[], available: numbers(row.available) };
  const settled = new Set(numbers(row.settled));
  const finished = new Set(numbers(row.finished));
  const results: unknown[] = [];
  let hold = 0;
  let taken = 0;
  for (const step of steps) {
    if (step.kind === 'settle') results.push(settled.has(step.id) ? step.wanted : null);
    else if (step.kind === 'finish') results.push(finished.has(step.id));
    else {
      const { amount } = holds[hold];
      const availableMsat = billed.available[hold];
      const refusal = billed.refusal[hold];
      hold++;
      const id = availableMsat !== null && refusal === null ? billed.held[taken++] : undefined;
      results.push({
        id: id ?? null,
        amountMsat: id === undefined ? 0 : amount,
        availableMsat,
        limitMsat: null,
        refusal,
      } satisfies HeldResult);
    }
  }
  if (taken !== billed.held.length) throw new Error('proxy_bill_steps held another number of reservations');
  return results;
}

/** Marks reservations this process still serves as alive (their heartbeat keeps the stale sweep away). */
export async function touchReservations(db: Executor, ids: number[], now: number): Promise<void> {
  await db
    .updateTable('proxy_requests')
    .set({ heartbeat_at: now })
    .where('id', 'in', ids)
    .where('status', '=', 'reserved')
    .execute();
}

/** Reservations whose heartbeat stopped before `before`: their process died. */
export async function staleReservations(db: Executor, before: number, limit: number) {
  return db
    .selectFrom('proxy_requests')
    .select(['id', 'account_id', 'child_key_id'])
    .where(sql<boolean>`status = 'reserved'`) // a literal: the partial index of live reservations serves it
    .where('heartbeat_at', '<', before)
    .limit(limit)
    .execute();
}

// ------------------------------------------------------------------------------------------------
// Keys with limits (issue 14): child keys, their counters in the billing transaction, Key-Expiry-Time
// and the per-key history of billed requests (child-keys.ts, key-routes.ts, docs/proxy-wallet.md).

export type ChildKeyRow = Selectable<ProxyChildKeysTable>;

/** A child key's row as a billing transaction holds it: read under its lock, written back once. */
interface ChildChange {
  parentId: number;
  limit: number | null;
  period: ResetPeriod;
  periodStart: number;
  periodSpent: number;
  reserved: number;
  totalSpent: number;
  requests: number;
  usedAt: number | null;
  expiresAt: number | null;
  revokedAt: number | null;
}

const LOCK_CHILD_KEYS_POSTGRES =
  'select * from "proxy_child_keys" where "id" = any($1::bigint[]) order by "id" for update';
const LOCK_CHILD_KEYS_SQLITE =
  'select * from "proxy_child_keys" where "id" in (select value from json_each(?)) order by "id"';
const CHILD_KEY: [Column<'proxy_child_keys'>] = [{ name: 'id', type: 'bigint' }];
const CHILD_CHANGE_COLUMNS: SetColumn<'proxy_child_keys'>[] = [
  ...columnsOf('proxy_child_keys', {
    period_start: 'bigint',
    period_spent_msat: 'bigint',
    reserved_msat: 'bigint',
    total_spent_msat: 'bigint',
    total_requests: 'bigint',
  }),
  { name: 'last_used_at', type: 'bigint', combine: 'unless-null' },
];

/**
 * Locks and reads the child keys the steps name (none: no statement). A period that has ended
 * starts afresh here: its spending no longer counts against the limit (what is reserved still does).
 */
async function lockChildKeys(trx: Executor, dialect: Dialect, steps: BillingStep[]): Promise<Map<number, ChildChange>> {
  const ids = new Set<number>();
  for (const step of steps) {
    const id = step.kind === 'reserve' ? step.request.childKeyId : step.childKeyId;
    if (id !== null && id !== undefined) ids.add(id);
  }
  const children = new Map<number, ChildChange>();
  if (!ids.size) return children;
  const sorted = [...ids].sort((a, b) => a - b);
  const read =
    dialect === 'postgres'
      ? CompiledQuery.raw(LOCK_CHILD_KEYS_POSTGRES, [sorted])
      : CompiledQuery.raw(LOCK_CHILD_KEYS_SQLITE, [JSON.stringify(sorted)]);
  const now = Math.max(...steps.map((step) => step.now));
  for (const row of (await trx.executeQuery<ChildKeyRow>(read)).rows) {
    const periodStart = periodStartOf(row.reset_period, now);
    const fresh = row.period_start < periodStart;
    children.set(row.id, {
      parentId: row.parent_account_id,
      limit: row.limit_msat,
      period: row.reset_period,
      periodStart: fresh ? periodStart : row.period_start,
      periodSpent: fresh ? 0 : row.period_spent_msat,
      reserved: row.reserved_msat,
      totalSpent: row.total_spent_msat,
      requests: row.total_requests,
      usedAt: null,
      expiresAt: row.expires_at,
      revokedAt: row.revoked_at,
    });
  }
  return children;
}

/** What a child key's limit leaves to spend in its period (Infinity without a limit). */
function childHeadroom(child: ChildChange): number {
  return child.limit === null ? Infinity : child.limit - child.periodSpent - child.reserved;
}

/** The locked child key of a ledger row; a row naming a child its step did not name is a bug. */
function childOf(children: Map<number, ChildChange>, id: number | null | undefined, requestId: number) {
  if (id === null || id === undefined) return undefined;
  const child = children.get(id);
  if (!child) throw new Error(`billed request ${requestId} belongs to child key ${id}, which its step did not name`);
  return child;
}

/** Writes the locked child keys back (all of them: their period may have started afresh). */
async function writeChildKeys(trx: Executor, dialect: Dialect, children: Map<number, ChildChange>): Promise<void> {
  if (!children.size) return;
  const values = [...children].flatMap(([id, c]) => [
    id,
    c.periodStart,
    c.periodSpent,
    c.reserved,
    c.totalSpent,
    c.requests,
    c.usedAt,
  ]);
  await updateRows(trx, dialect, 'proxy_child_keys', CHILD_KEY, CHILD_CHANGE_COLUMNS, values);
}

export async function insertChildKeys(db: Executor, rows: Insertable<ProxyChildKeysTable>[]): Promise<ChildKeyRow[]> {
  return db.insertInto('proxy_child_keys').values(rows).returningAll().execute();
}

export async function childKeyByHash(db: Executor, keyHash: string): Promise<ChildKeyRow | undefined> {
  return db.selectFrom('proxy_child_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
}

/** A parent's child keys, newest first: `limit` of them before id `before`. */
export async function childKeysOf(db: Executor, parentId: number, page: { before?: number; limit: number }) {
  let query = db.selectFrom('proxy_child_keys').selectAll().where('parent_account_id', '=', parentId);
  if (page.before !== undefined) query = query.where('id', '<', page.before);
  return query.orderBy('id', 'desc').limit(page.limit).execute();
}

export async function countChildKeys(db: Executor, parentId: number): Promise<number> {
  const row = await db
    .selectFrom('proxy_child_keys')
    .select(sql<number>`count(*)`.as('count'))
    .where('parent_account_id', '=', parentId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** Revokes a parent's child key; its row as it is now, undefined when the parent has no such key. */
export async function revokeChildKey(db: Executor, parentId: number, id: number, now: number) {
  await db
    .updateTable('proxy_child_keys')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('parent_account_id', '=', parentId)
    .where('revoked_at', 'is', null)
    .execute();
  return db
    .selectFrom('proxy_child_keys')
    .selectAll()
    .where('id', '=', id)
    .where('parent_account_id', '=', parentId)
    .executeTakeFirst();
}

/**
 * Starts a parent's child key's period afresh (Routstr's reset): its spending so far no longer
 * counts. Under its parent's row lock, as the billing transaction changes its counters.
 */
export async function resetChildKeyPeriod(db: Executor, parentId: number, id: number, now: number): Promise<boolean> {
  await lockAccountRow(db, parentId);
  const result = await db
    .updateTable('proxy_child_keys')
    .set({ period_spent_msat: 0, period_start: now })
    .where('id', '=', id)
    .where('parent_account_id', '=', parentId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Takes an account's row lock for the rest of the transaction (a no-op write; SQLite locks anyway). */
async function lockAccountRow(db: Executor, accountId: number): Promise<void> {
  await db
    .updateTable('proxy_accounts')
    .set({ reserved_msat: sql<number>`reserved_msat` })
    .where('id', '=', accountId)
    .execute();
}

/** Sets Key-Expiry-Time (ms) on an account that has none yet; false when it had one. */
export async function setAccountExpiry(db: Executor, accountId: number, expiresAt: number): Promise<boolean> {
  const result = await db
    .updateTable('proxy_accounts')
    .set({ expires_at: expiresAt })
    .where('id', '=', accountId)
    .where('expires_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Billed requests of an account (or of one of its child keys), newest first: `limit` of them
 * before ledger id `before`. Settled ones only: a released request cost nothing.
 */
export async function billedRequests(
  db: Executor,
  of: { accountId: number; childKeyId: number | null },
  page: { before?: number; limit: number },
) {
  let query = db
    .selectFrom('proxy_requests')
    .select([
      'id',
      'request_id',
      'path',
      'model',
      'stream',
      'payment',
      'charged_msat',
      'cost_msat',
      'input_msat',
      'output_msat',
      'prompt_tokens',
      'completion_tokens',
      'usage_source',
      'created_at',
      'settled_at',
      'child_key_id',
    ])
    .where('account_id', '=', of.accountId)
    .where('status', '=', 'settled');
  if (of.childKeyId !== null) query = query.where('child_key_id', '=', of.childKeyId);
  if (page.before !== undefined) query = query.where('id', '<', page.before);
  return query.orderBy('id', 'desc').limit(page.limit).execute();
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

/**
 * Schedules the account's refund at its expiry once it has both an expiry and a refund address
 * (whichever is given second schedules it; a schedule that exists stays).
 */
export async function scheduleExpiryRefund(db: Executor, accountId: number, now: number): Promise<void> {
  await db
    .insertInto('proxy_expiry_refunds')
    .columns(['account_id', 'attempts', 'next_attempt_at', 'updated_at'])
    .expression((eb) =>
      eb
        .selectFrom('proxy_accounts as a')
        .innerJoin('proxy_refund_addresses as r', 'r.account_id', 'a.id')
        .select([
          'a.id',
          sql<number>`0`.as('attempts'),
          sql<number>`a.expires_at`.as('next_attempt_at'),
          sql<number>`cast(${now} as bigint)`.as('updated_at'),
        ])
        .where('a.id', '=', accountId)
        .where('a.expires_at', 'is not', null),
    )
    .onConflict((oc) => oc.column('account_id').doNothing())
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

/**
 * Every refund of an account that took money, tokens and Lightning payments alike, newest first
 * (GET /v1/wallet/refunds): `limit` of them before operation id `before`.
 */
export async function refundHistory(db: Executor, accountId: number, page: { before?: number; limit: number }) {
  let query = db
    .selectFrom('proxy_mint_ops as o')
    .leftJoin('proxy_lightning_payments as p', 'p.op_id', 'o.id')
    .selectAll('o')
    .select(['p.recipient', 'p.amount_msat as paid_msat'])
    .where('o.debit_account_id', '=', accountId)
    .where('o.kind', 'in', ['issue', 'melt'])
    .where('o.purpose', '=', 'refund')
    .where('o.state', '!=', 'failed');
  if (page.before !== undefined) query = query.where('o.id', '<', page.before);
  return query.orderBy('o.id', 'desc').limit(page.limit).execute();
}
