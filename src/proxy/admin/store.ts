// SQL of the admin page: live reservations, holdings, recent rows, withdrawals of earnings, sessions.
// Sums are cast to bigint in SQL: PostgreSQL's sum() of a bigint is numeric (a string to pg),
// while a bigint arrives as a number (src/db/index.ts).
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';
import type { ProxyAdminSessionsTable } from '../common/tables.js';

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
