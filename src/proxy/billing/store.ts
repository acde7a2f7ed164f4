// SQL of billing: reservations and settlements of forwarded requests, with the counters of the
// accounts and child keys they charge, in one transaction (docs/proxy-billing.md).
import { CompiledQuery, sql } from 'kysely';
import { columnsOf, insertRows, updateRows, type Column, type SetColumn } from '../../db/bulk.js';
import type { Dialect, Executor } from '../../db/index.js';
import { namedStatement } from '../../db/named.js';
import { periodStartOf } from '../keys/key-periods.js';
import type { ResetPeriod } from '../common/tables.js';
import type { ChildKeyRow } from '../keys/store.js';
import type { BillingStep, HeldResult } from './steps.js';

// ------------------------------------------------------------------------------------------------
// Billing: reservations and settlements of forwarded requests (billing.ts, docs/proxy-billing.md).

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
  provider: 'text',
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
      step.provider,
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
        provider: step.provider,
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
      // Set on the result built above (a spread copy redefining its fields cost V8 a new hidden class each time).
      const held = results[i] as HeldResult;
      held.id = rows[k].id;
      held.amountMsat = amount;
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
  // settles: id, account, reserved, charged, cost, input, output, prompt, completion, source, upstream, now, provider
  ...['bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'text', 'integer'],
  ...['bigint', 'text'],
  // finishes: id, account, status, error, upstream, stale before, now, provider
  ...['bigint', 'bigint', 'text', 'text', 'integer', 'bigint', 'bigint', 'text'],
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
    column(settles, (s) => s.provider),
    column(finishes, (f) => f.id),
    column(finishes, (f) => f.accountId),
    column(finishes, (f) => f.status),
    column(finishes, (f) => f.reason.slice(0, 500)),
    column(finishes, (f) => f.upstreamStatus),
    column(finishes, (f) => f.staleBefore ?? null),
    column(finishes, (f) => f.now),
    column(finishes, (f) => f.provider),
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
  // pg reads a bigint[] as strings (only a single bigint is parsed to a number, in src/db/index.ts).
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
