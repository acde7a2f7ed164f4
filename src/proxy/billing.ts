// Reservation and settlement of billed requests. Every step is one transaction of conditional
// statements, so concurrent requests (in one process or several sharing PostgreSQL) can never
// spend the same millisatoshi, and a balance never goes below zero:
//   reserve: reserved += x where balance - reserved >= x  (+ the ledger row)
//   settle:  reserved -= x, balance -= charge (charge <= x), spent += charge, requests += 1
//   release: reserved -= x
// The ledger row's status moves once from 'reserved', which makes settle/release exactly-once.
// Writes arriving together share one transaction (group commit): on SQLite a commit, not a
// statement, is the expensive part, and under load one commit then serves many requests. On
// PostgreSQL every statement is a round trip, so several such transactions run at once (each
// on its own connection); their writes take account rows in ascending id order, which keeps
// two of them from waiting on each other.
import { sql, type Transaction } from 'kysely';
import type { Database } from '../db/index.js';
import { prepared, type Params } from '../db/prepared.js';
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
  amountMsat: number;
  requestId: string;
  path: string;
  model: string;
  stream: boolean;
  payment: 'key' | 'x-cashu';
}

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

type Write<T> = (trx: Transaction<DB>) => Promise<T>;

interface Queued {
  write: Write<unknown>;
  /** The account whose row the write locks: a shared transaction takes them in ascending order. */
  accountId: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** Most writes one shared transaction takes (it holds its row locks until it commits). */
const MAX_BATCH = 64;
/** Shared transactions at once on PostgreSQL (each holds a pooled connection while it runs). */
const MAX_CONCURRENT_TRANSACTIONS = 4;

export class Billing {
  /** Reservations this process is serving: their heartbeat keeps other processes' sweeps away. */
  private live = new Set<number>();
  private queue: Queued[] = [];
  private scheduled = false;
  private inFlight = 0;
  /** Shared transactions running at once: one on SQLite's single connection. */
  private maxInFlight: number;
  private timers: NodeJS.Timeout[] = [];
  private background = new Set<Promise<unknown>>();

  private outcomes?: Counter;
  private charged?: Counter;

  constructor(private db: Database, private config: ForwardConfig, private log: Logger, metrics?: MetricsRegistry) {
    this.maxInFlight = db.dialect === 'postgres' ? MAX_CONCURRENT_TRANSACTIONS : 1;
    this.outcomes = metrics?.counter('quartet_proxy_billed_requests_total', 'Billed requests by outcome (settled, released, expired)');
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

  /**
   * Runs `write` in a transaction shared with the other billing writes queued at this moment.
   * Each write is a few conditional statements that cannot fail on their own; if the shared
   * transaction fails anyway (a deadlock between processes, say), nothing of it was kept and each
   * write is retried in a transaction of its own.
   */
  private transact<T>(accountId: number, write: Write<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, accountId, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  /** Starts shared transactions for what is queued, once the writes of this moment are in. */
  private schedule() {
    if (this.scheduled || this.queue.length === 0 || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.queue.length && this.inFlight < this.maxInFlight) {
        const batch = this.queue.splice(0, MAX_BATCH).sort((a, b) => a.accountId - b.accountId);
        this.inFlight++;
        void this.runBatch(batch).finally(() => {
          this.inFlight--;
          this.schedule();
        });
      }
    });
  }

  private async runBatch(batch: Queued[]) {
    try {
      const results = await this.db.kysely.transaction().execute(async (trx) => {
        const out: unknown[] = [];
        for (const item of batch) out.push(await item.write(trx));
        return out;
      });
      batch.forEach((item, i) => item.resolve(results[i]));
    } catch (error) {
      if (batch.length === 1) return batch[0].reject(error);
      await Promise.all(batch.map((item) => this.db.kysely.transaction().execute(item.write).then(item.resolve, item.reject)));
    }
  }

  /** Holds `amountMsat` of the account's available balance; null when it is not available. */
  async reserve(request: ReserveRequest): Promise<Reservation | null> {
    const now = Date.now();
    const id = await this.transact(request.accountId, async (trx) => {
      const held = await holdBalance.run(trx, { accountId: request.accountId, amountMsat: request.amountMsat, now });
      if (Number(held.numAffectedRows) !== 1) return null;
      const { rows } = await insertReservation.run(trx, {
        accountId: request.accountId,
        requestId: request.requestId,
        path: request.path,
        model: request.model,
        stream: request.stream ? 1 : 0,
        payment: request.payment,
        reservedMsat: request.amountMsat,
        now,
      });
      return Number(rows[0].id);
    });
    if (id === null) return null;
    this.live.add(id);
    return { id, accountId: request.accountId, reservedMsat: request.amountMsat };
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
      this.log.warn({ reservation: reservation.id, cost: cost.totalMsat, reserved: reservation.reservedMsat }, 'request cost more than its reservation; the node absorbs the difference');
    }
    const now = Date.now();
    const done = await this.transact(reservation.accountId, async (trx) => {
      const ledger = await settleReservation.run(trx, {
        id: reservation.id,
        chargedMsat: charge,
        costMsat: cost.totalMsat,
        inputMsat: cost.inputMsat,
        outputMsat: cost.outputMsat,
        promptTokens: usage.promptTokens,
        completionTokens: usage.completionTokens,
        usageSource: settlement.usageSource,
        upstreamStatus: settlement.upstreamStatus,
        now,
      });
      if (Number(ledger.numAffectedRows) !== 1) return false;
      await chargeAccount.run(trx, { accountId: reservation.accountId, reservedMsat: reservation.reservedMsat, chargedMsat: charge, now });
      return true;
    });
    this.live.delete(reservation.id);
    if (!done) return 0;
    this.outcomes?.inc({ outcome: 'settled' });
    this.charged?.inc({}, charge);
    return charge;
  }

  /** Gives the whole reservation back (upstream failure, timeout, nothing delivered). */
  async release(reservation: Reservation, reason: string, upstreamStatus: number | null = null): Promise<void> {
    await this.finish(reservation.id, reservation.accountId, 'released', reason, upstreamStatus);
    this.live.delete(reservation.id);
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
      this.log.error({ err: error, reservation: reservation.id }, 'could not release a reservation; the stale sweep will');
    } finally {
      this.live.delete(reservation.id);
    }
  }

  private async finish(id: number, accountId: number, status: 'released' | 'expired', reason: string, upstreamStatus: number | null, staleBefore?: number): Promise<boolean> {
    const now = Date.now();
    const done = await this.transact(accountId, async (trx) => {
      let update = trx
        .updateTable('proxy_requests')
        .set({ status, error: reason.slice(0, 500), upstream_status: upstreamStatus, settled_at: now })
        .where('id', '=', id)
        .where('status', '=', 'reserved');
      if (staleBefore !== undefined) update = update.where('heartbeat_at', '<', staleBefore);
      const row = await update.returning(['account_id', 'reserved_msat']).executeTakeFirst();
      if (!row) return false;
      await trx
        .updateTable('proxy_accounts')
        .set({ reserved_msat: sql<number>`reserved_msat - ${Number(row.reserved_msat)}` })
        .where('id', '=', Number(row.account_id))
        .execute();
      return true;
    });
    if (done) this.outcomes?.inc({ outcome: status });
    return done;
  }

  private async heartbeat() {
    const ids = [...this.live];
    const now = Date.now();
    for (let i = 0; i < ids.length; i += 500) {
      await this.db.kysely.updateTable('proxy_requests').set({ heartbeat_at: now }).where('id', 'in', ids.slice(i, i + 500)).where('status', '=', 'reserved').execute();
    }
  }

  /** Releases reservations whose process died (no heartbeat for PROXY_STALE_RESERVATION_SECONDS). */
  async sweepStale(): Promise<number> {
    const before = Date.now() - this.config.staleReservationMs;
    const stale = await this.db.kysely
      .selectFrom('proxy_requests')
      .select(['id', 'account_id'])
      .where('status', '=', 'reserved')
      .where('heartbeat_at', '<', before)
      .limit(500)
      .execute();
    let released = 0;
    for (const { id, account_id } of stale) {
      if (this.live.has(Number(id))) continue;
      if (await this.finish(Number(id), Number(account_id), 'expired', 'no heartbeat: the serving process stopped', null, before)) released++;
    }
    if (released) this.log.warn({ released }, 'released reservations of stopped processes');
    return released;
  }
}

// The statements every billed request runs (see ../db/prepared.ts for why they are prepared).

const holdBalance = prepared((p: Params<{ accountId: number; amountMsat: number; now: number }>, db) =>
  db
    .updateTable('proxy_accounts')
    .set({ reserved_msat: sql<number>`reserved_msat + ${p.amountMsat}`, last_used_at: p.now })
    .where('id', '=', p.accountId)
    .where(sql<boolean>`balance_msat - reserved_msat >= ${p.amountMsat}`),
);

const insertReservation = prepared(
  (p: Params<{ accountId: number; requestId: string; path: string; model: string; stream: number; payment: 'key' | 'x-cashu'; reservedMsat: number; now: number }>, db) =>
    db
      .insertInto('proxy_requests')
      .values({
        account_id: p.accountId,
        request_id: p.requestId,
        path: p.path,
        model: p.model,
        stream: p.stream,
        payment: p.payment,
        status: 'reserved',
        reserved_msat: p.reservedMsat,
        created_at: p.now,
        heartbeat_at: p.now,
      })
      .returning('id'),
);

const settleReservation = prepared(
  (
    p: Params<{
      id: number;
      chargedMsat: number;
      costMsat: number;
      inputMsat: number;
      outputMsat: number;
      promptTokens: number;
      completionTokens: number;
      usageSource: 'upstream' | 'estimate';
      upstreamStatus: number;
      now: number;
    }>,
    db,
  ) =>
    db
      .updateTable('proxy_requests')
      .set({
        status: 'settled',
        charged_msat: p.chargedMsat,
        cost_msat: p.costMsat,
        input_msat: p.inputMsat,
        output_msat: p.outputMsat,
        prompt_tokens: p.promptTokens,
        completion_tokens: p.completionTokens,
        usage_source: p.usageSource,
        upstream_status: p.upstreamStatus,
        settled_at: p.now,
      })
      .where('id', '=', p.id)
      .where('status', '=', 'reserved'),
);

const chargeAccount = prepared((p: Params<{ accountId: number; reservedMsat: number; chargedMsat: number; now: number }>, db) =>
  db
    .updateTable('proxy_accounts')
    .set({
      reserved_msat: sql<number>`reserved_msat - ${p.reservedMsat}`,
      balance_msat: sql<number>`balance_msat - ${p.chargedMsat}`,
      total_spent_msat: sql<number>`total_spent_msat + ${p.chargedMsat}`,
      total_requests: sql<number>`total_requests + 1`,
      last_used_at: p.now,
    })
    .where('id', '=', p.accountId),
);
