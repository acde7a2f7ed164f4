// SQL of keys: child keys, Key-Expiry-Time and the per-key history of billed requests.
import { sql, type Insertable, type Selectable } from 'kysely';
import type { Executor } from '../../db/index.js';
import type { ProxyChildKeysTable } from '../common/tables.js';

// ------------------------------------------------------------------------------------------------
// Keys with limits (issue 14): child keys, their counters in the billing transaction, Key-Expiry-Time
// and the per-key history of billed requests (child-keys.ts, key-routes.ts, docs/proxy-wallet.md).

export type ChildKeyRow = Selectable<ProxyChildKeysTable>;

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

/** A parent's child keys that are not revoked, oldest first (at most `limit`). */
export async function liveChildKeysOf(db: Executor, parentId: number, limit: number) {
  return db
    .selectFrom('proxy_child_keys')
    .selectAll()
    .where('parent_account_id', '=', parentId)
    .where('revoked_at', 'is', null)
    .orderBy('id', 'asc')
    .limit(limit)
    .execute();
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
