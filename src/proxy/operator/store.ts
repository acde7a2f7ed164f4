// SQL of the operator's domain: the node's money (live reservations, holdings, recent rows,
// withdrawals of earnings) and the operator's credentials and record (bearer tokens of the API, the
// admin page's cookie sessions, the password set through the API, the audit log).
// Sums are cast to bigint in SQL: PostgreSQL's sum() of a bigint is numeric (a string to pg),
// while a bigint arrives as a number (src/db/index.ts).
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';
import type { ProxyAdminSessionsTable, ProxyAuditLogTable, ProxyOperatorTokensTable } from '../common/tables.js';

type NewToken = Omit<ProxyOperatorTokensTable, 'id'>;

export async function insertOperatorToken(db: Executor, token: NewToken): Promise<number> {
  const row = await db.insertInto('proxy_operator_tokens').values(token).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

export async function operatorTokenByHash(db: Executor, tokenHash: string) {
  return db
    .selectFrom('proxy_operator_tokens')
    .select(['id', 'kind', 'name', 'expires_at', 'last_used_at'])
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
}

export async function touchOperatorToken(db: Executor, id: number, now: number): Promise<void> {
  await db.updateTable('proxy_operator_tokens').set({ last_used_at: now }).where('id', '=', id).execute();
}

export async function listCliTokens(db: Executor) {
  return db
    .selectFrom('proxy_operator_tokens')
    .select(['id', 'name', 'preview', 'created_by', 'created_at', 'last_used_at', 'expires_at'])
    .where('kind', '=', 'cli')
    .orderBy('id')
    .execute();
}

export async function cliTokenById(db: Executor, id: number) {
  return db
    .selectFrom('proxy_operator_tokens')
    .select(['id', 'name', 'preview', 'created_at', 'expires_at'])
    .where('kind', '=', 'cli')
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Deletes a token; true when there was one. */
export async function deleteOperatorToken(db: Executor, id: number): Promise<boolean> {
  const result = await db.deleteFrom('proxy_operator_tokens').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function deleteOperatorTokenByHash(db: Executor, tokenHash: string): Promise<void> {
  await db.deleteFrom('proxy_operator_tokens').where('token_hash', '=', tokenHash).execute();
}

/** Session tokens die with a password change; so do expired tokens of either kind. */
export async function deleteSessionTokens(db: Executor): Promise<void> {
  await db.deleteFrom('proxy_operator_tokens').where('kind', '=', 'session').execute();
}

export async function deleteExpiredOperatorTokens(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('proxy_operator_tokens').where('expires_at', '<', now).execute();
}

export async function storedOperatorPassword(db: Executor) {
  return db.selectFrom('proxy_operator_password').select(['salt', 'hash']).where('id', '=', 1).executeTakeFirst();
}

export async function storeOperatorPassword(db: Executor, salt: string, hash: string, now: number): Promise<void> {
  await db
    .insertInto('proxy_operator_password')
    .values({ id: 1, salt, hash, updated_at: now })
    .onConflict((oc) => oc.column('id').doUpdateSet({ salt, hash, updated_at: now }))
    .execute();
}

export async function insertAuditEntry(db: Executor, entry: Omit<ProxyAuditLogTable, 'id'>): Promise<void> {
  await db.insertInto('proxy_audit_log').values(entry).execute();
}

export interface AuditFilter {
  action: string | null;
  target: string | null;
  limit: number;
  offset: number;
}

export async function auditEntries(db: Executor, filter: AuditFilter) {
  let query = db.selectFrom('proxy_audit_log').selectAll();
  if (filter.action !== null) query = query.where('action', '=', filter.action);
  if (filter.target !== null) query = query.where('target', '=', filter.target);
  return query.orderBy('id', 'desc').limit(filter.limit).offset(filter.offset).execute();
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

/** A billed request's time from its reservation to its end (ms); null while it is in flight. */
const LATENCY = sql<number>`settled_at - created_at`;

/**
 * The billed requests made since `since` (ms): how many, how many ended without a billed answer
 * (released or expired: the upstream failed, timed out or the caller left), how many got a 5xx
 * from upstream, and the mean and longest time of those that ended.
 */
export async function requestHealthSince(db: Executor, since: number) {
  return db
    .selectFrom('proxy_requests')
    .select([
      sql<number>`cast(count(*) as bigint)`.as('requests'),
      sql<number>`cast(coalesce(sum(case when status in ('released', 'expired') then 1 else 0 end), 0) as bigint)`.as(
        'failed',
      ),
      sql<number>`cast(coalesce(sum(case when upstream_status >= 500 then 1 else 0 end), 0) as bigint)`.as(
        'upstream_errors',
      ),
      sql<number>`cast(coalesce(sum(case when settled_at is not null then 1 else 0 end), 0) as bigint)`.as('ended'),
      sql<number | null>`cast(avg(${LATENCY}) as bigint)`.as('mean_latency_ms'),
      sql<number | null>`cast(max(${LATENCY}) as bigint)`.as('max_latency_ms'),
    ])
    .where('created_at', '>=', since)
    .executeTakeFirstOrThrow();
}

/** The `rank`-th shortest time (0-based) of the requests since `since` that ended: a percentile's value. */
export async function requestLatencyAtRank(db: Executor, since: number, rank: number): Promise<number | null> {
  const row = await db
    .selectFrom('proxy_requests')
    .select(LATENCY.as('latency'))
    .where('created_at', '>=', since)
    .where('settled_at', 'is not', null)
    .orderBy(LATENCY)
    .limit(1)
    .offset(rank)
    .executeTakeFirst();
  return row ? Number(row.latency) : null;
}
