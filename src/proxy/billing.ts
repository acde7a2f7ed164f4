// Reservation and settlement of billed requests. Every step is one transaction of conditional
// statements, so concurrent requests (in one process or several sharing PostgreSQL) can never
// spend the same millisatoshi, and a balance never goes below zero:
//   reserve: reserved += x where balance - reserved >= x  (+ the ledger row)
//   settle:  reserved -= x, balance -= charge (charge <= x), spent += charge, requests += 1
//   release: reserved -= x
// The ledger row's status moves once from 'reserved', which makes settle/release exactly-once.
//
// Steps arriving together share one transaction (group commit), written set-wise: the accounts
// they touch are locked and read once (in ascending id order, so two transactions never wait on
// each other in a cycle), the ledger rows change in one statement per kind, and each account
// gets one update with the sum of its steps. On SQLite a commit, not a statement, is the
// expensive part, and under load one commit serves many requests. On PostgreSQL every statement
// is a round trip: a transaction holds its accounts' row locks for four of them whatever its
// size, and several such transactions run at once, each on its own connection.
import { CompiledQuery, sql, type Kysely } from 'kysely';
import { updateRows, insertRows, type Column, type SetColumn } from '../db/bulk.js';
import { writeTransaction, type Database, type Dialect } from '../db/index.js';
import type { DB } from '../db/schema.js';
import type { Counter, MetricsRegistry } from '../http/metrics.js';
import type { ForwardConfig } from './forward-config.js';
import type { Cost } from './pricing.js';
import type { Usage } from './metering.js';

export interface Reservation {
  id: number;
  accountId: number;
  reservedMsat: number;
}

export interface ReserveRequest {
  accountId: number;
  /**
   * The amount to hold, given what the account has available under the transaction's lock; null
   * (or more than is available) refuses the reservation. Called once per attempt, the last call
   * being the one that counts.
   */
  amountFor(availableMsat: number): number | null;
  requestId: string;
  path: string;
  model: string;
  stream: boolean;
  payment: 'key' | 'x-cashu';
}

/** A held reservation, or a refusal with what the account had available (null: no such account). */
export type ReserveResult =
  { reservation: Reservation; availableMsat: number } | { reservation: null; availableMsat: number | null };

export interface Settlement {
  cost: Cost;
  usage: Usage;
  usageSource: 'upstream' | 'estimate';
  upstreamStatus: number;
  /** X-Cashu payments are charged in whole sats (their change is a sat token). */
  roundToSat?: boolean;
}

interface Logger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** One step of a shared transaction. */
type Work = (
  | { kind: 'reserve'; request: ReserveRequest }
  | {
      kind: 'settle';
      id: number;
      charged: number;
      cost: Cost;
      usage: Usage;
      usageSource: string;
      upstreamStatus: number;
    }
  | {
      kind: 'finish';
      id: number;
      status: 'released' | 'expired';
      reason: string;
      upstreamStatus: number | null;
      staleBefore?: number;
    }
) & {
  /** The account whose row the step changes. */
  accountId: number;
};

/** A queued step, with the caller waiting for its result. */
type Step = Work & {
  now: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
};

/** Most steps one shared transaction takes. */
const MAX_BATCH = 64;
/** Shared transactions at once on PostgreSQL (each holds a pooled connection while it runs). */
const MAX_CONCURRENT_TRANSACTIONS = 4;

export class Billing {
  /** Reservations this process is serving, with their accounts: their heartbeat keeps other processes' sweeps away. */
  private live = new Map<number, number>();
  /** Callers waiting for a reservation of an account to be settled or released (see `freed`). */
  private waiting = new Map<number, Set<() => void>>();
  private queue: Step[] = [];
  private scheduled = false;
  private inFlight = 0;
  /** Accounts whose steps a running shared transaction has: their next steps wait for it. */
  private busyAccounts = new Set<number>();
  /** Shared transactions running at once: one on SQLite's single connection. */
  private maxInFlight: number;
  private timers: NodeJS.Timeout[] = [];
  private background = new Set<Promise<unknown>>();

  private outcomes?: Counter;
  private charged?: Counter;

  constructor(
    private db: Database,
    private config: ForwardConfig,
    private log: Logger,
    metrics?: MetricsRegistry,
  ) {
    this.maxInFlight = db.dialect === 'postgres' ? MAX_CONCURRENT_TRANSACTIONS : 1;
    this.outcomes = metrics?.counter(
      'quartet_proxy_billed_requests_total',
      'Billed requests by outcome (settled, released, expired)',
      ['outcome'],
    );
    this.charged = metrics?.counter('quartet_proxy_charged_msat_total', 'Millisatoshis charged for requests');
  }

  /** Starts the heartbeat of live reservations and the sweep of dead ones. */
  start() {
    const beat = Math.max(1000, Math.floor(this.config.staleReservationMs / 4));
    this.timers.push(setInterval(() => this.track(this.heartbeat()), beat).unref());
    this.timers.push(setInterval(() => this.track(this.sweepStale()), beat * 2).unref());
  }

  /** Waits for settlements still running (e.g. streams whose client left) and stops the timers. */
  async close() {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    while (this.background.size) await Promise.allSettled([...this.background]);
  }

  /**
   * Registers work that must finish before the database closes (a request whose caller left is
   * still settled, even during shutdown); returns the promise unchanged.
   */
  hold<T>(promise: Promise<T>): Promise<T> {
    const done = promise.then(
      () => undefined,
      () => undefined,
    );
    this.background.add(done);
    void done.finally(() => this.background.delete(done));
    return promise;
  }

  /** A timer's task: held like a request, its failure logged. */
  private track(promise: Promise<unknown>) {
    this.hold(promise).catch((error) => this.log.error({ err: error }, 'billing background task failed'));
  }

  /** Queues a step (a new object, which it keeps) for the next shared transaction; resolves with its result. */
  private enqueue<T>(work: Work): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // The caller's fresh object becomes the queued step (a spread copy of it showed in profiles).
      const step = work as Step;
      step.now = Date.now();
      step.resolve = resolve as (value: unknown) => void;
      step.reject = reject;
      this.queue.push(step);
      this.schedule();
    });
  }

  /** Starts shared transactions for what is queued, once the steps of this moment are in. */
  private schedule() {
    if (this.scheduled || this.queue.length === 0 || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.inFlight < this.maxInFlight) {
        const batch = this.takeBatch();
        if (!batch.length) break;
        this.inFlight++;
        void this.runBatch(batch).finally(() => {
          this.inFlight--;
          for (const step of batch) this.busyAccounts.delete(step.accountId);
          this.schedule();
        });
      }
    });
  }

  /**
   * The queued steps of accounts no running transaction has, up to MAX_BATCH. A transaction
   * never waits for another of this process on an account's row lock: one hot account's steps
   * gather into the next transaction instead (measured on PostgreSQL with one account: 2,400
   * requests/s this way, 1,800 with four transactions contending for its row).
   */
  private takeBatch(): Step[] {
    const batch: Step[] = [];
    const rest: Step[] = [];
    for (const step of this.queue) {
      (batch.length < MAX_BATCH && !this.busyAccounts.has(step.accountId) ? batch : rest).push(step);
    }
    this.queue = rest;
    for (const step of batch) this.busyAccounts.add(step.accountId);
    return batch;
  }

  /**
   * Runs the steps in one transaction. Each step is conditional and cannot fail on its own; if
   * the transaction fails anyway (a lost connection, say), nothing of it was kept, and each step
   * is tried again in a transaction of its own.
   */
  private async runBatch(batch: Step[]) {
    try {
      const results = await writeTransaction(this.db, (trx) => applySteps(trx, this.db.dialect, batch));
      batch.forEach((step, i) => step.resolve(results[i]));
    } catch (error) {
      if (batch.length === 1) return batch[0].reject(error);
      await Promise.all(batch.map((step) => this.runBatch([step])));
    }
  }

  /** Holds what `amountFor` asks of the account's available balance, if it is available. */
  async reserve(request: ReserveRequest): Promise<ReserveResult> {
    const held = await this.enqueue<{ id: number | null; amountMsat: number; availableMsat: number | null }>({
      kind: 'reserve',
      accountId: request.accountId,
      request,
    });
    if (held.id === null) return { reservation: null, availableMsat: held.availableMsat };
    this.live.set(held.id, request.accountId);
    return {
      reservation: { id: held.id, accountId: request.accountId, reservedMsat: held.amountMsat },
      availableMsat: held.availableMsat!,
    };
  }

  /**
   * Charges the cost (at most the reservation) and releases the rest. Returns the amount charged;
   * 0 when the reservation was already finished (e.g. swept as stale).
   */
  async settle(reservation: Reservation, settlement: Settlement): Promise<number> {
    const { cost, usage } = settlement;
    const wanted = settlement.roundToSat ? Math.ceil(cost.totalMsat / 1000) * 1000 : cost.totalMsat;
    const charge = Math.min(wanted, reservation.reservedMsat);
    if (charge < cost.totalMsat) {
      this.log.warn(
        { reservation: reservation.id, cost: cost.totalMsat, reserved: reservation.reservedMsat },
        'request cost more than its reservation; the node absorbs the difference',
      );
    }
    const done = await this.enqueue<boolean>({
      kind: 'settle',
      accountId: reservation.accountId,
      id: reservation.id,
      charged: charge,
      cost,
      usage,
      usageSource: settlement.usageSource,
      upstreamStatus: settlement.upstreamStatus,
    });
    this.live.delete(reservation.id);
    this.wake(reservation.accountId);
    if (!done) return 0;
    this.outcomes?.inc({ outcome: 'settled' });
    this.charged?.inc({}, charge);
    return charge;
  }

  /** Gives the whole reservation back (upstream failure, timeout, nothing delivered). */
  async release(reservation: Reservation, reason: string, upstreamStatus: number | null = null): Promise<void> {
    await this.finish(reservation.id, reservation.accountId, 'released', reason, upstreamStatus);
    this.live.delete(reservation.id);
    this.wake(reservation.accountId);
  }

  /**
   * Waits until a reservation of the account that this process serves is settled or released
   * (a request usually costs less than it reserved, so a refused one may fit then), at most
   * `withinMs`. False at once when this process serves none of the account's reservations.
   */
  async freed(accountId: number, withinMs: number): Promise<boolean> {
    if (![...this.live.values()].includes(accountId)) return false;
    let waiters = this.waiting.get(accountId);
    if (!waiters) this.waiting.set(accountId, (waiters = new Set()));
    const set = waiters;
    return new Promise<boolean>((resolve) => {
      const done = (woken: boolean) => {
        clearTimeout(timer);
        set.delete(wake);
        if (set.size === 0 && this.waiting.get(accountId) === set) this.waiting.delete(accountId);
        resolve(woken);
      };
      const wake = () => done(true);
      const timer = setTimeout(() => done(false), withinMs);
      set.add(wake);
    });
  }

  private wake(accountId: number) {
    const waiters = this.waiting.get(accountId);
    if (waiters) for (const wake of [...waiters]) wake();
  }

  /**
   * The safety net after a request: a reservation neither settled nor released (an unexpected
   * error) is released; if even that fails its heartbeat stops, so the stale sweep frees it.
   */
  async abandon(reservation: Reservation, reason: string): Promise<void> {
    if (!this.live.has(reservation.id)) return;
    try {
      await this.release(reservation, reason);
    } catch (error) {
      this.log.error(
        { err: error, reservation: reservation.id },
        'could not release a reservation; the stale sweep will',
      );
    } finally {
      this.live.delete(reservation.id);
    }
  }

  private async finish(
    id: number,
    accountId: number,
    status: 'released' | 'expired',
    reason: string,
    upstreamStatus: number | null,
    staleBefore?: number,
  ): Promise<boolean> {
    const done = await this.enqueue<boolean>({
      kind: 'finish',
      accountId,
      id,
      status,
      reason,
      upstreamStatus,
      staleBefore,
    });
    if (done) this.outcomes?.inc({ outcome: status });
    return done;
  }

  private async heartbeat() {
    const ids = [...this.live.keys()];
    const now = Date.now();
    for (let i = 0; i < ids.length; i += 500) {
      await this.db.kysely
        .updateTable('proxy_requests')
        .set({ heartbeat_at: now })
        .where('id', 'in', ids.slice(i, i + 500))
        .where('status', '=', 'reserved')
        .execute();
    }
  }

  /** Releases reservations whose process died (no heartbeat for PROXY_STALE_RESERVATION_SECONDS). */
  async sweepStale(): Promise<number> {
    const before = Date.now() - this.config.staleReservationMs;
    const stale = await this.db.kysely
      .selectFrom('proxy_requests')
      .select(['id', 'account_id'])
      .where(sql<boolean>`status = 'reserved'`) // a literal: the partial index of live reservations serves it
      .where('heartbeat_at', '<', before)
      .limit(500)
      .execute();
    let released = 0;
    for (const { id, account_id } of stale) {
      if (this.live.has(Number(id))) continue;
      if (
        await this.finish(
          Number(id),
          Number(account_id),
          'expired',
          'no heartbeat: the serving process stopped',
          null,
          before,
        )
      ) {
        released++;
      }
    }
    if (released) this.log.warn({ released }, 'released reservations of stopped processes');
    return released;
  }
}

/** What a shared transaction changes on one account: sums of its steps. */
interface AccountChange {
  /** balance - reserved as read under the lock, then as the steps leave it. */
  available: number;
  reserved: number;
  balance: number;
  spent: number;
  requests: number;
  usedAt: number | null;
}

const ID: Column[] = [{ name: 'id', type: 'bigint' }];
const SETTLED_COLUMNS: SetColumn[] = [
  { name: 'status', type: 'text' },
  { name: 'charged_msat', type: 'bigint' },
  { name: 'cost_msat', type: 'bigint' },
  { name: 'input_msat', type: 'bigint' },
  { name: 'output_msat', type: 'bigint' },
  { name: 'prompt_tokens', type: 'bigint' },
  { name: 'completion_tokens', type: 'bigint' },
  { name: 'usage_source', type: 'text' },
  { name: 'upstream_status', type: 'integer' },
  { name: 'settled_at', type: 'bigint' },
];
const ACCOUNT_CHANGE_COLUMNS: SetColumn[] = [
  { name: 'reserved_msat', type: 'bigint', combine: 'add' },
  { name: 'balance_msat', type: 'bigint', combine: 'add' },
  { name: 'total_spent_msat', type: 'bigint', combine: 'add' },
  { name: 'total_requests', type: 'bigint', combine: 'add' },
  { name: 'last_used_at', type: 'bigint', combine: 'unless-null' },
];
const RESERVATION_COLUMNS: Column[] = [
  { name: 'account_id', type: 'bigint' },
  { name: 'request_id', type: 'text' },
  { name: 'path', type: 'text' },
  { name: 'model', type: 'text' },
  { name: 'stream', type: 'integer' },
  { name: 'payment', type: 'text' },
  { name: 'status', type: 'text' },
  { name: 'reserved_msat', type: 'bigint' },
  { name: 'created_at', type: 'bigint' },
  { name: 'heartbeat_at', type: 'bigint' },
];
const STILL_RESERVED = `t."status" = 'reserved'`;
// The same text for any number of accounts (SQLite reuses its prepared statement). On SQLite the
// transaction already holds the write lock (begin immediate).
const LOCK_ACCOUNTS_POSTGRES =
  'select "id", "balance_msat", "reserved_msat" from "proxy_accounts" where "id" = any($1::bigint[]) order by "id" for update';
const LOCK_ACCOUNTS_SQLITE =
  'select "id", "balance_msat", "reserved_msat" from "proxy_accounts" where "id" in (select value from json_each(?)) order by "id"';

/** The steps of one shared transaction, set-wise (see the top of this file); their results in order. */
async function applySteps(trx: Kysely<DB>, dialect: Dialect, steps: Step[]): Promise<unknown[]> {
  const results: unknown[] = new Array(steps.length).fill(null);

  // 1. Lock the accounts, in ascending id order, and read what each has available.
  const accountIds = [...new Set(steps.map((step) => step.accountId))].sort((a, b) => a - b);
  const read =
    dialect === 'postgres'
      ? CompiledQuery.raw(LOCK_ACCOUNTS_POSTGRES, [accountIds])
      : CompiledQuery.raw(LOCK_ACCOUNTS_SQLITE, [JSON.stringify(accountIds)]);
  const accounts = new Map<number, AccountChange>();
  for (const row of (await trx.executeQuery<{ id: number; balance_msat: number; reserved_msat: number }>(read)).rows) {
    accounts.set(Number(row.id), {
      available: Number(row.balance_msat) - Number(row.reserved_msat),
      reserved: 0,
      balance: 0,
      spent: 0,
      requests: 0,
      usedAt: null,
    });
  }

  // 2. Settle and release ledger rows still reserved; what they held becomes available again.
  const settles = steps.flatMap((step, i) => (step.kind === 'settle' ? [{ step, i }] : []));
  if (settles.length) {
    const values = settles.flatMap(({ step }) => [
      step.id,
      'settled',
      step.charged,
      step.cost.totalMsat,
      step.cost.inputMsat,
      step.cost.outputMsat,
      step.usage.promptTokens,
      step.usage.completionTokens,
      step.usageSource,
      step.upstreamStatus,
      step.now,
    ]);
    const rows = await updateRows<{ id: number; reserved_msat: number }>(
      trx,
      dialect,
      'proxy_requests',
      ID,
      SETTLED_COLUMNS,
      values,
      { where: STILL_RESERVED, returning: ['id', 'reserved_msat'] },
    );
    const held = new Map(rows.map((row) => [Number(row.id), Number(row.reserved_msat)]));
    for (const { step, i } of settles) {
      const reserved = held.get(step.id);
      const account = accounts.get(step.accountId);
      results[i] = reserved !== undefined && account !== undefined;
      if (reserved === undefined || !account) continue;
      account.reserved -= reserved;
      account.balance -= step.charged;
      account.spent += step.charged;
      account.requests += 1;
      account.available += reserved - step.charged;
      account.usedAt = step.now;
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
    const row = await update.returning('reserved_msat').executeTakeFirst();
    const account = accounts.get(step.accountId);
    results[i] = row !== undefined && account !== undefined;
    if (!row || !account) continue;
    account.reserved -= Number(row.reserved_msat);
    account.available += Number(row.reserved_msat);
  }

  // 3. Hold new reservations, in the order they came, from what is available now.
  const holds: { step: Step & { kind: 'reserve' }; i: number; amount: number }[] = [];
  for (const [i, step] of steps.entries()) {
    if (step.kind !== 'reserve') continue;
    const account = accounts.get(step.accountId);
    const available = account ? Math.max(0, account.available) : null;
    const amount = account ? step.request.amountFor(account.available) : null;
    results[i] = { id: null, amountMsat: 0, availableMsat: available };
    if (!account || amount === null || !Number.isSafeInteger(amount) || amount <= 0 || amount > account.available) {
      continue;
    }
    account.available -= amount;
    account.reserved += amount;
    account.usedAt = step.now;
    holds.push({ step, i, amount });
  }

  // 4. One update per account with the sums.
  const changes = [...accounts].filter(
    ([, c]) => c.reserved || c.balance || c.spent || c.requests || c.usedAt !== null,
  );
  if (changes.length) {
    const values = changes.flatMap(([id, c]) => [id, c.reserved, c.balance, c.spent, c.requests, c.usedAt]);
    await updateRows(trx, dialect, 'proxy_accounts', ID, ACCOUNT_CHANGE_COLUMNS, values);
  }

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
      ];
    });
    const rows = await insertRows<{ id: number; request_id: string; account_id: number; reserved_msat: number }>(
      trx,
      dialect,
      'proxy_requests',
      RESERVATION_COLUMNS,
      values,
      ['id', 'request_id', 'account_id', 'reserved_msat'],
    );
    rows.sort((a, b) => Number(a.id) - Number(b.id));
    const matches = (row: (typeof rows)[number], hold: (typeof holds)[number]) =>
      row.request_id === hold.step.request.requestId &&
      Number(row.account_id) === hold.step.accountId &&
      Number(row.reserved_msat) === hold.amount;
    if (rows.length !== holds.length || rows.some((row, k) => !matches(row, holds[k]))) {
      throw new Error('the ledger rows of new reservations came back in an unexpected order');
    }
    holds.forEach(
      ({ i, amount }, k) =>
        (results[i] = {
          id: Number(rows[k].id),
          amountMsat: amount,
          availableMsat: (results[i] as { availableMsat: number }).availableMsat,
        }),
    );
  }
  return results;
}
