// SQL of the operator's domain: the node's money (live reservations, holdings, recent rows,
// withdrawals of earnings) and the operator's credentials and record (bearer tokens of the API, the
// admin page's cookie sessions, the password set through the API, the audit log).
// Sums are cast to bigint in SQL: PostgreSQL's sum() of a bigint is numeric (a string to pg),
// while a bigint arrives as a number (src/db/index.ts).
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';
import type {
  ProxyAdminSessionsTable,
  ProxyAuditLogTable,
  ProxyChildKeysTable,
  ProxyOperatorTokensTable,
} from '../common/tables.js';

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

/** Users' balances per mint and unit (what the node owes them), msat. */
export async function balancesOwedByMint(db: Executor) {
  return db
    .selectFrom('proxy_accounts')
    .select(['mint_url', 'unit', sql<number>`cast(coalesce(sum(balance_msat), 0) as bigint)`.as('owed')])
    .groupBy(['mint_url', 'unit'])
    .execute();
}

/** `like` pattern matching `text` anywhere, its wildcards taken literally. */
const containing = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * Keys as Routstr's temporary balances list them: every account and every child key, newest first.
 * A child key owns no balance (it spends its parent's) and names its parent's key hash.
 */
function keyRows(db: Executor, search: string | null) {
  let accounts = db
    .selectFrom('proxy_accounts as a')
    .leftJoin('proxy_refund_addresses as r', 'r.account_id', 'a.id')
    .select([
      'a.key_hash as hashed_key',
      'a.balance_msat as balance',
      'a.total_spent_msat as total_spent',
      'a.total_requests as total_requests',
      'r.address as refund_address',
      'a.expires_at as expires_at',
      sql<string | null>`null`.as('parent_key_hash'),
      sql<number | null>`null`.as('balance_limit'),
      sql<string | null>`null`.as('balance_limit_reset'),
      'a.created_at as created_at',
    ]);
  let children = db
    .selectFrom('proxy_child_keys as c')
    .innerJoin('proxy_accounts as p', 'p.id', 'c.parent_account_id')
    .select([
      'c.key_hash as hashed_key',
      sql<number>`0`.as('balance'),
      'c.total_spent_msat as total_spent',
      'c.total_requests as total_requests',
      sql<string | null>`null`.as('refund_address'),
      'c.expires_at as expires_at',
      'p.key_hash as parent_key_hash',
      'c.limit_msat as balance_limit',
      'c.reset_period as balance_limit_reset',
      'c.created_at as created_at',
    ])
    .where('c.revoked_at', 'is', null);
  if (search !== null) {
    const pattern = containing(search);
    accounts = accounts.where((eb) =>
      eb.or([
        sql<boolean>`a.key_hash like ${pattern} escape '\\'`,
        sql<boolean>`r.address like ${pattern} escape '\\'`,
      ]),
    );
    children = children.where(sql<boolean>`c.key_hash like ${pattern} escape '\\'`);
  }
  return { accounts, children };
}

export async function keysPage(db: Executor, search: string | null, limit: number, offset: number) {
  const { accounts, children } = keyRows(db, search);
  return db
    .selectFrom(accounts.unionAll(children).as('k'))
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('hashed_key')
    .limit(limit)
    .offset(offset)
    .execute();
}

/** Count and totals of the (searched) keys; balances are the accounts' alone (children draw on them). */
export async function keysTotals(db: Executor, search: string | null) {
  const { accounts, children } = keyRows(db, search);
  return db
    .selectFrom(accounts.unionAll(children).as('k'))
    .select([
      sql<number>`count(*)`.as('total'),
      sql<number>`cast(coalesce(sum(balance), 0) as bigint)`.as('total_balance'),
      sql<number>`cast(coalesce(sum(total_spent), 0) as bigint)`.as('total_spent'),
      sql<number>`cast(coalesce(sum(total_requests), 0) as bigint)`.as('total_requests'),
    ])
    .executeTakeFirstOrThrow();
}

export async function childKeyByHash(db: Executor, keyHash: string) {
  return db
    .selectFrom('proxy_child_keys')
    .select(['id', 'key_hash', 'limit_msat', 'reset_period', 'expires_at'])
    .where('key_hash', '=', keyHash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

export async function accountExistsByHash(db: Executor, keyHash: string): Promise<boolean> {
  const row = await db.selectFrom('proxy_accounts').select('id').where('key_hash', '=', keyHash).executeTakeFirst();
  return row !== undefined;
}

export async function updateChildKeyLimits(
  db: Executor,
  id: number,
  change: {
    limit_msat?: number | null;
    reset_period?: ProxyChildKeysTable['reset_period'];
    expires_at?: number | null;
  },
): Promise<void> {
  await db.updateTable('proxy_child_keys').set(change).where('id', '=', id).execute();
}

export interface TransactionFilter {
  type: 'in' | 'out' | null;
  source: string | null;
  status: string | null;
  search: string | null;
  limit: number;
  offset: number;
}

/**
 * Ecash that came in (tokens redeemed, foreign tokens swapped) and went out (refunds, change,
 * withdrawals), from the mint journal. The journal keeps a token's hash, never the token.
 */
function transactionRows(db: Executor, filter: Omit<TransactionFilter, 'limit' | 'offset'>) {
  let query = db
    .selectFrom('proxy_mint_ops')
    .select([
      'id',
      'kind',
      'purpose',
      'state',
      'mint_url',
      'unit',
      'token_hash',
      'credit_key_hash',
      'credit_msat',
      'debit_msat',
      'debit_account_id',
      'claimed_at',
      'created_at',
    ])
    .where('kind', 'in', ['redeem', 'foreign', 'issue'])
    // A failed operation moved no ecash (its proofs were given back or never taken).
    .where('state', '!=', 'failed');
  if (filter.type === 'in') query = query.where('kind', 'in', ['redeem', 'foreign']);
  if (filter.type === 'out') query = query.where('kind', '=', 'issue');
  if (filter.source === 'admin') query = query.where('purpose', '=', 'withdraw');
  if (filter.source === 'x-cashu') query = query.where('purpose', 'in', ['payment', 'change']);
  if (filter.source === 'apikey') query = query.where('purpose', 'not in', ['payment', 'change', 'withdraw']);
  // Routstr's statuses (see transactionStatus in ./node-routes.ts); nothing is ever `swept` here.
  if (filter.status === 'collected') {
    query = query
      .where('state', '=', 'done')
      .where((eb) =>
        eb.or([eb('kind', '!=', 'issue'), eb.and([eb('purpose', '!=', 'withdraw'), eb('claimed_at', 'is not', null)])]),
      );
  }
  if (filter.status === 'issued') query = query.where('state', '=', 'done').where('purpose', '=', 'withdraw');
  if (filter.status === 'pending') {
    query = query.where((eb) =>
      eb.or([
        eb('state', 'in', ['preparing', 'pending']),
        eb.and([eb('kind', '=', 'issue'), eb('purpose', '!=', 'withdraw'), eb('claimed_at', 'is', null)]),
      ]),
    );
  }
  if (filter.status === 'swept') query = query.where(sql<boolean>`1 = 0`);
  if (filter.search !== null) {
    const pattern = containing(filter.search);
    query = query.where((eb) =>
      eb.or([
        sql<boolean>`cast(id as text) like ${pattern} escape '\\'`,
        sql<boolean>`token_hash like ${pattern} escape '\\'`,
        sql<boolean>`credit_key_hash like ${pattern} escape '\\'`,
      ]),
    );
  }
  return query;
}

export async function transactionsPage(db: Executor, filter: TransactionFilter) {
  return transactionRows(db, filter).orderBy('id', 'desc').limit(filter.limit).offset(filter.offset).execute();
}

export async function countTransactions(db: Executor, filter: TransactionFilter): Promise<number> {
  const row = await db
    .selectFrom(transactionRows(db, filter).as('t'))
    .select(sql<number>`count(*)`.as('total'))
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

export interface InvoiceFilter {
  status: string | null;
  purpose: string | null;
  search: string | null;
  limit: number;
  offset: number;
}

function invoiceRows(db: Executor, filter: InvoiceFilter) {
  let query = db
    .selectFrom('proxy_lightning_invoices as i')
    .leftJoin('proxy_accounts as a', 'a.id', 'i.account_id')
    .select([
      'i.id',
      'i.bolt11',
      'i.amount_sats',
      'i.payment_hash',
      'i.status',
      'i.purpose',
      'i.mint_url',
      'i.created_at',
      'i.expires_at',
      'i.paid_at',
      'a.key_hash as api_key_hash',
    ]);
  if (filter.status !== null) query = query.where('i.status', '=', filter.status as 'pending');
  if (filter.purpose !== null) query = query.where('i.purpose', '=', filter.purpose as 'create');
  if (filter.search !== null) {
    const pattern = containing(filter.search);
    query = query.where((eb) =>
      eb.or([
        sql<boolean>`i.id like ${pattern} escape '\\'`,
        sql<boolean>`i.bolt11 like ${pattern} escape '\\'`,
        sql<boolean>`i.payment_hash like ${pattern} escape '\\'`,
        sql<boolean>`a.key_hash like ${pattern} escape '\\'`,
      ]),
    );
  }
  return query;
}

export async function invoicesPage(db: Executor, filter: InvoiceFilter) {
  return invoiceRows(db, filter).orderBy('i.created_at', 'desc').limit(filter.limit).offset(filter.offset).execute();
}

export async function countInvoices(db: Executor, filter: InvoiceFilter): Promise<number> {
  const row = await db
    .selectFrom(invoiceRows(db, filter).as('t'))
    .select(sql<number>`count(*)`.as('total'))
    .executeTakeFirstOrThrow();
  return Number(row.total);
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
