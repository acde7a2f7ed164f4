// SQL of the wallet: accounts and their refunds, the journal of mint operations and the proofs the
// node holds. Every balance change is one conditional statement, so it is atomic on SQLite and
// PostgreSQL alike and never a read-modify-write in JavaScript.
import { sql, type Insertable, type Selectable } from 'kysely';
import type { Executor } from '../../db/index.js';
import { prepared, type Params } from '../../db/prepared.js';
import type { MintOpKind, ProxyAccountsTable, ProxyMintOpsTable, ProxyProofsTable } from '../common/tables.js';

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

// Every request with a key runs this one: prepared (src/db/prepared.ts).
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
  kinds: MintOpKind[] = ['redeem', 'issue', 'foreign'],
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

/**
 * A foreign swap's new quotes and outputs after a refused melt (./foreign.ts), in place of the
 * journal `was`; false when the operation was settled or journaled anew by someone else meanwhile.
 */
export async function rejournalOp(
  db: Executor,
  id: number,
  was: string,
  values: { request: string; credit_msat: number; lease_until: number; updated_at: number },
): Promise<boolean> {
  const updated = await db
    .updateTable('proxy_mint_ops')
    .set(values)
    .where('id', '=', id)
    .where('state', '=', 'pending')
    .where('request', '=', was)
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) === 1;
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

/** balance - reserved of an account; null when there is no such account. */
export async function availableMsat(db: Executor, accountId: number): Promise<number | null> {
  const row = await db
    .selectFrom('proxy_accounts')
    .select(['balance_msat', 'reserved_msat'])
    .where('id', '=', accountId)
    .executeTakeFirst();
  return row ? row.balance_msat - row.reserved_msat : null;
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
