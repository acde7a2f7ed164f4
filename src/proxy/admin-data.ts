// The admin page's SQL: node totals, the node's earnings and their withdrawal, accounts, recent
// billed requests, the proofs held per mint (a read-only query of the wallet's proxy_proofs),
// and the login sessions (in the database, so every process agrees).
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Database } from '../db/index.js';
import { HttpError } from '../http/errors.js';
import type { NodeWallet } from './wallet.js';

export interface NodeTotals {
  /** Everything users' accounts own (including reserved). */
  heldMsat: number;
  reservedMsat: number;
  /** Charged for requests, all time. */
  earnedMsat: number;
  /** Paid out (or being paid out) to the operator. */
  withdrawnMsat: number;
  /** The node's own money still in the wallet: earned − withdrawn. */
  earningsMsat: number;
  accounts: number;
  settledRequests: number;
  inFlight: number;
}

const num = (value: unknown) => Number(value ?? 0);
/** Written as a literal, so the partial index of live reservations (migration 2102) serves it. */
const STILL_RESERVED = sql<boolean>`status = 'reserved'`;

export async function nodeTotals(db: Database): Promise<NodeTotals> {
  const k = db.kysely;
  // Earned is the accounts' spent counters, kept in the same transaction as each charge: a sum
  // over accounts, not over the whole ledger.
  const [accounts, live, withdrawn] = await Promise.all([
    k
      .selectFrom('proxy_accounts')
      .select([
        sql<number>`coalesce(sum(balance_msat), 0)`.as('held'),
        sql<number>`coalesce(sum(reserved_msat), 0)`.as('reserved'),
        sql<number>`coalesce(sum(total_spent_msat), 0)`.as('earned'),
        sql<number>`coalesce(sum(total_requests), 0)`.as('settled'),
        sql<number>`count(*)`.as('count'),
      ])
      .executeTakeFirstOrThrow(),
    k
      .selectFrom('proxy_requests')
      .select(sql<number>`count(*)`.as('count'))
      .where(STILL_RESERVED)
      .executeTakeFirstOrThrow(),
    k
      .selectFrom('proxy_withdrawals')
      .select(sql<number>`coalesce(sum(amount_msat), 0)`.as('total'))
      .where('status', '!=', 'failed')
      .executeTakeFirstOrThrow(),
  ]);
  const earnedMsat = num(accounts.earned);
  const withdrawnMsat = num(withdrawn.total);
  return {
    heldMsat: num(accounts.held),
    reservedMsat: num(accounts.reserved),
    earnedMsat,
    withdrawnMsat,
    earningsMsat: earnedMsat - withdrawnMsat,
    accounts: num(accounts.count),
    settledRequests: num(accounts.settled),
    inFlight: num(live.count),
  };
}

export interface MintHolding {
  mintUrl: string;
  unit: string;
  unspent: number;
  reserved: number;
  proofs: number;
}

/** The proofs the node holds, per mint and unit (read-only view of the wallet's proxy_proofs). */
export async function mintHoldings(db: Database): Promise<MintHolding[]> {
  const rows = await db.kysely
    .selectFrom('proxy_proofs')
    .select([
      'mint_url',
      'unit',
      sql<number>`coalesce(sum(case when state = 'unspent' then amount else 0 end), 0)`.as('unspent'),
      sql<number>`coalesce(sum(case when state = 'reserved' then amount else 0 end), 0)`.as('reserved'),
      sql<number>`sum(case when state = 'unspent' then 1 else 0 end)`.as('proofs'),
    ])
    .where('state', '!=', 'spent')
    .groupBy(['mint_url', 'unit'])
    .orderBy('mint_url')
    .execute();
  return rows.map((row) => ({
    mintUrl: row.mint_url,
    unit: row.unit,
    unspent: num(row.unspent),
    reserved: num(row.reserved),
    proofs: num(row.proofs),
  }));
}

export async function recentAccounts(db: Database, limit = 100) {
  return db.kysely
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

export async function recentRequests(db: Database, limit = 50) {
  return db.kysely
    .selectFrom('proxy_requests as r')
    .leftJoin('proxy_accounts as a', 'a.id', 'r.account_id')
    .select([
      'r.id',
      'a.key_prefix',
      'r.model',
      'r.path',
      'r.stream',
      'r.payment',
      'r.status',
      'r.reserved_msat',
      'r.charged_msat',
      'r.cost_msat',
      'r.prompt_tokens',
      'r.completion_tokens',
      'r.usage_source',
      'r.upstream_status',
      'r.created_at',
    ])
    .orderBy('r.id', 'desc')
    .limit(limit)
    .execute();
}

export async function recentWithdrawals(db: Database, limit = 20) {
  return db.kysely.selectFrom('proxy_withdrawals').selectAll().orderBy('id', 'desc').limit(limit).execute();
}

/**
 * Pays `amountMsat` of the node's earnings out as a Cashu token of `mintUrl`. The lock row makes
 * the check-and-record one serialized step across processes; the withdrawal is recorded before
 * the token is made and marked failed (freeing the amount) if the wallet cannot make it.
 */
export async function withdrawEarnings(
  db: Database,
  wallet: NodeWallet,
  amountMsat: number,
  mintUrl: string,
  by: string,
): Promise<{ id: number; token: string }> {
  if (!wallet.mints.includes(mintUrl)) {
    throw new HttpError(400, `Unknown mint ${mintUrl}; this node trusts ${wallet.mints.join(', ')}`);
  }
  if (!Number.isSafeInteger(amountMsat) || amountMsat <= 0 || amountMsat % 1000 !== 0) {
    throw new HttpError(400, 'The amount must be a positive whole number of sats');
  }
  const now = Date.now();
  const id = await db.kysely.transaction().execute(async (trx) => {
    await trx
      .updateTable('proxy_node_lock')
      .set({ version: sql<number>`version + 1` })
      .where('id', '=', 1)
      .execute();
    const earned = await trx
      .selectFrom('proxy_accounts')
      .select(sql<number>`coalesce(sum(total_spent_msat), 0)`.as('total'))
      .executeTakeFirstOrThrow();
    const withdrawn = await trx
      .selectFrom('proxy_withdrawals')
      .select(sql<number>`coalesce(sum(amount_msat), 0)`.as('total'))
      .where('status', '!=', 'failed')
      .executeTakeFirstOrThrow();
    const available = num(earned.total) - num(withdrawn.total);
    if (amountMsat > available) {
      throw new HttpError(400, `The node's earnings are ${available} msat; ${amountMsat} msat cannot be withdrawn`);
    }
    const row = await trx
      .insertInto('proxy_withdrawals')
      .values({
        amount_msat: amountMsat,
        mint_url: mintUrl,
        status: 'pending',
        token: null,
        error: null,
        created_by: by,
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return Number(row.id);
  });
  try {
    const token = await wallet.issue(amountMsat, mintUrl, { purpose: 'withdraw' });
    await db.kysely
      .updateTable('proxy_withdrawals')
      .set({ status: 'issued', token, updated_at: Date.now() })
      .where('id', '=', id)
      .execute();
    return { id, token };
  } catch (error) {
    await db.kysely
      .updateTable('proxy_withdrawals')
      .set({ status: 'failed', error: (error as Error).message.slice(0, 500), updated_at: Date.now() })
      .where('id', '=', id)
      .execute();
    throw error instanceof HttpError
      ? error
      : new HttpError(503, `The token could not be made: ${(error as Error).message}`);
  }
}

// --- sessions --------------------------------------------------------------------------

const hashId = (id: string) => createHash('sha256').update(id).digest('hex');

export async function createSession(
  db: Database,
  principal: string,
  lifetimeMs: number,
): Promise<{ id: string; csrf: string; expiresAt: number }> {
  const id = randomBytes(32).toString('base64url');
  const csrf = randomBytes(32).toString('base64url');
  const now = Date.now();
  await db.kysely.deleteFrom('proxy_admin_sessions').where('expires_at', '<', now).execute();
  await db.kysely
    .insertInto('proxy_admin_sessions')
    .values({ id_hash: hashId(id), csrf_token: csrf, principal, created_at: now, expires_at: now + lifetimeMs })
    .execute();
  return { id, csrf, expiresAt: now + lifetimeMs };
}

export async function findSession(db: Database, id: string): Promise<{ principal: string; csrf: string } | null> {
  // Looked up by the id's digest: the database compares hashes, never the cookie itself.
  const row = await db.kysely
    .selectFrom('proxy_admin_sessions')
    .select(['principal', 'csrf_token', 'expires_at'])
    .where('id_hash', '=', hashId(id))
    .executeTakeFirst();
  if (!row || Number(row.expires_at) <= Date.now()) return null;
  return { principal: row.principal, csrf: row.csrf_token };
}

export async function deleteSession(db: Database, id: string): Promise<void> {
  await db.kysely.deleteFrom('proxy_admin_sessions').where('id_hash', '=', hashId(id)).execute();
}
