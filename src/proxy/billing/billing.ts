// Reservation and settlement of billed requests (docs/proxy-billing.md). Every step is
// conditional, so concurrent requests (in one process or several sharing PostgreSQL) can never
// spend the same millisatoshi, and a balance never goes below zero:
//   reserve: reserved += x where balance - reserved >= x  (+ the ledger row)
//   settle:  reserved -= x, balance -= charge, spent += charge, requests += 1, where the charge is
//            the cost, and above x only what the account has available besides (never below zero)
//   release: reserved -= x
// The ledger row's status moves once from 'reserved', which makes settle/release exactly-once.
// Steps arriving together share one transaction (src/db/group-commit.ts), written set-wise by
// applyBillingSteps in store.ts.
import { GroupCommit } from '../../db/group-commit.js';
import { databaseOutage } from '../../db/errors.js';
import { writeTransaction, type Database } from '../../db/index.js';
import { retryWhileUnavailable } from '../../db/retry.js';
import type { Counter, MetricsRegistry } from '../../http/metrics.js';
import type { ForwardConfig } from '../common/forward-config.js';
import type { Usage } from './metering.js';
import type { Cost } from './pricing.js';
import type { BillingStep, HeldResult, KeyRefusal, ReserveRequest } from './steps.js';
import { applyBillingSteps, applyBillingStepsAtOnce, staleReservations, touchReservations } from './store.js';

export interface Reservation {
  id: number;
  accountId: number;
  reservedMsat: number;
  /** The child key whose limit counts it (null: the account's own key). */
  childKeyId: number | null;
  /** The provider that answered, set by the forwarding once it knows; its settle or release records it. */
  provider?: string | null;
}

/**
 * A held reservation, or a refusal with what the account had available (null: no such account),
 * what a child key's limit left (null: no limit) and whether the key may no longer spend at all.
 */
export type ReserveResult =
  | { reservation: Reservation; availableMsat: number; limitMsat: number | null; refusal: null }
  | { reservation: null; availableMsat: number | null; limitMsat: number | null; refusal: KeyRefusal | null };

export interface Settlement {
  cost: Cost;
  usage: Usage;
  usageSource: 'upstream' | 'estimate';
  upstreamStatus: number;
  /** X-Cashu payments are charged in whole sats (their change is a sat token). */
  roundToSat?: boolean;
  /** The most it may be charged (ReservationPlan.ceilingMsat); the reservation when absent. */
  ceilingMsat?: number;
}

interface Logger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Most steps one shared transaction takes. */
const MAX_BATCH = 64;
/** Shared transactions at once on PostgreSQL (each holds a pooled connection while it runs). */
const MAX_CONCURRENT_TRANSACTIONS = 4;
/** Reservations a heartbeat or sweep statement touches at most. */
const ROWS_PER_STATEMENT = 500;

export class Billing {
  /** Reservations this process is serving, with their accounts: their heartbeat keeps other processes' sweeps away. */
  private live = new Map<number, number>();
  /** Callers waiting for a reservation of an account to be settled or released (see `freed`). */
  private waiting = new Map<number, Set<() => void>>();
  /** The queue of steps for shared transactions (a new object per step, which the queue keeps). */
  private steps: GroupCommit<BillingStep>;
  private timers: NodeJS.Timeout[] = [];
  private background = new Set<Promise<unknown>>();
  /** Aborted at close: work waiting for the database to come back stops waiting (the stale sweep takes over). */
  private stopped = new AbortController();
  /** Reservations whose settlement waits for the database (settleWhenBack). */
  private settlingLater = new Set<number>();

  private outcomes?: Counter;
  /** The `settled` series of `outcomes`, found once: by a labels object it is hashed at every settle. */
  private settledCount?: Counter.Internal;
  private charged?: Counter;

  constructor(
    private db: Database,
    private config: ForwardConfig,
    private log: Logger,
    metrics?: MetricsRegistry,
  ) {
    this.steps = new GroupCommit((steps) => this.apply(steps), {
      keyOf: (step) => step.accountId,
      maxBatch: MAX_BATCH,
      // One on SQLite's single connection; on PostgreSQL one hot account's steps gather into the
      // next transaction rather than contend for its row (bench/README.md#group-commit-of-billing).
      maxConcurrent: db.dialect === 'postgres' ? MAX_CONCURRENT_TRANSACTIONS : 1,
    });
    this.outcomes = metrics?.counter(
      'quartet_proxy_billed_requests_total',
      'Billed requests by outcome (settled, released, expired)',
      ['outcome'],
    );
    this.settledCount = this.outcomes?.labels('settled');
    this.charged = metrics?.counter('quartet_proxy_charged_msat_total', 'Millisatoshis charged for requests');
  }

  /**
   * A batch of steps: on PostgreSQL in one statement when it can be (one round trip instead of a
   * transaction's six), else in a transaction.
   */
  private async apply(steps: BillingStep[]): Promise<unknown[]> {
    const { db } = this;
    if (db.dialect === 'postgres') {
      const results = await applyBillingStepsAtOnce(db.kysely, steps);
      if (results) return results;
    }
    return writeTransaction(db, (trx) => applyBillingSteps(trx, db.dialect, steps));
  }

  /** Starts the heartbeat of live reservations and the sweep of dead ones. */
  start() {
    const beat = Math.max(1000, Math.floor(this.config.staleReservationMs / 4));
    this.timers.push(setInterval(() => this.track(this.heartbeat()), beat).unref());
    this.timers.push(setInterval(() => this.track(this.sweepStale()), beat * 2).unref());
  }

  /** Waits for settlements still running (e.g. streams whose client left) and stops the timers. */
  async close() {
    this.stopped.abort();
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

  /** Holds what `amountFor` asks of the account's available balance, if it is available. */
  async reserve(request: ReserveRequest): Promise<ReserveResult> {
    const held = await this.steps.run<HeldResult>({
      kind: 'reserve',
      accountId: request.accountId,
      now: Date.now(),
      request,
    });
    const { limitMsat, refusal } = held;
    if (held.id === null) return { reservation: null, availableMsat: held.availableMsat, limitMsat, refusal };
    this.live.set(held.id, request.accountId);
    const childKeyId = request.childKeyId ?? null;
    return {
      reservation: { id: held.id, accountId: request.accountId, reservedMsat: held.amountMsat, childKeyId },
      availableMsat: held.availableMsat!,
      limitMsat,
      refusal: null,
    };
  }

  /**
   * Charges the cost (at most the reservation) and releases the rest. Returns the amount charged;
   * 0 when the reservation was already finished (e.g. swept as stale).
   */
  async settle(reservation: Reservation, settlement: Settlement): Promise<number> {
    const { cost, usage } = settlement;
    const rounded = settlement.roundToSat ? Math.ceil(cost.totalMsat / 1000) * 1000 : cost.totalMsat;
    const ceiling = Math.max(settlement.ceilingMsat ?? 0, reservation.reservedMsat);
    const wanted = Math.min(rounded, ceiling);
    // The charge is fixed in the transaction: above the reservation, what the account has available.
    const charged = await this.steps.run<number | null>({
      kind: 'settle',
      accountId: reservation.accountId,
      now: Date.now(),
      id: reservation.id,
      wanted,
      reservedMsat: reservation.reservedMsat,
      cost,
      usage,
      usageSource: settlement.usageSource,
      upstreamStatus: settlement.upstreamStatus,
      childKeyId: reservation.childKeyId,
      provider: reservation.provider ?? null,
    });
    this.live.delete(reservation.id);
    this.wake(reservation.accountId);
    if (charged === null) return 0;
    if (charged < cost.totalMsat) {
      this.log.warn(
        { reservation: reservation.id, cost: cost.totalMsat, reserved: reservation.reservedMsat, charged },
        'request cost more than its reservation and the balance; the node absorbs the difference',
      );
    }
    this.settledCount?.inc();
    this.charged?.inc(charged);
    return charged;
  }

  /**
   * Settles once the database is back, where settling failed because it is away: for an answer
   * the caller has already (a stream), which is charged rather than given away. Settling is done
   * once (the ledger row leaves 'reserved' once); live meanwhile, and `abandon` leaves it alone.
   */
  settleWhenBack(reservation: Reservation, settlement: Settlement, cause: unknown): void {
    this.settlingLater.add(reservation.id);
    this.log.warn({ err: cause, reservation: reservation.id }, 'the database is away; settling when it is back');
    const settled = retryWhileUnavailable(() => this.settle(reservation, settlement), this.stopped.signal);
    this.track(settled.finally(() => this.settlingLater.delete(reservation.id)));
  }

  /** Gives the whole reservation back (upstream failure, timeout, nothing delivered). */
  async release(reservation: Reservation, reason: string, upstreamStatus: number | null = null): Promise<void> {
    await this.finish(reservation, 'released', reason, upstreamStatus);
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
   * error) is released; while the database is away, once it is back; if even that fails its
   * heartbeat stops, so the stale sweep frees it.
   */
  async abandon(reservation: Reservation, reason: string): Promise<void> {
    if (!this.live.has(reservation.id) || this.settlingLater.has(reservation.id)) return;
    try {
      await this.release(reservation, reason);
    } catch (error) {
      if (databaseOutage(error) && !this.stopped.signal.aborted) {
        // The ledger row leaves 'reserved' once, so a release whose commit was lost with its
        // connection is not done twice. Live meanwhile: its heartbeat keeps other processes' sweeps off.
        this.log.warn({ err: error, reservation: reservation.id }, 'the database is away; releasing when it is back');
        this.track(retryWhileUnavailable(() => this.release(reservation, reason), this.stopped.signal));
        return;
      }
      this.live.delete(reservation.id);
      this.log.error(
        { err: error, reservation: reservation.id },
        'could not release a reservation; the stale sweep will',
      );
    }
  }

  private async finish(
    { id, accountId, childKeyId, provider }: Omit<Reservation, 'reservedMsat'>,
    status: 'released' | 'expired',
    reason: string,
    upstreamStatus: number | null,
    staleBefore?: number,
  ): Promise<boolean> {
    const done = await this.steps.run<boolean>({
      kind: 'finish',
      accountId,
      childKeyId,
      now: Date.now(),
      id,
      status,
      reason,
      upstreamStatus,
      staleBefore,
      provider: provider ?? null,
    });
    if (done) this.outcomes?.inc({ outcome: status });
    return done;
  }

  private async heartbeat() {
    const ids = [...this.live.keys()];
    const now = Date.now();
    for (let i = 0; i < ids.length; i += ROWS_PER_STATEMENT) {
      await touchReservations(this.db.kysely, ids.slice(i, i + ROWS_PER_STATEMENT), now);
    }
  }

  /** Releases reservations whose process died (no heartbeat for PROXY_STALE_RESERVATION_SECONDS). */
  async sweepStale(): Promise<number> {
    const before = Date.now() - this.config.staleReservationMs;
    const stale = await staleReservations(this.db.kysely, before, ROWS_PER_STATEMENT);
    let released = 0;
    for (const { id, account_id, child_key_id } of stale) {
      if (this.live.has(id)) continue;
      const row = { id, accountId: account_id, childKeyId: child_key_id };
      if (await this.finish(row, 'expired', 'no heartbeat: the serving process stopped', null, before)) {
        released++;
      }
    }
    if (released) this.log.warn({ released }, 'released reservations of stopped processes');
    return released;
  }
}
