// Refunds of expired keys (issue 14, docs/proxy-wallet.md#key-expiry-time): an account given both
// an expiry (Key-Expiry-Time) and a Refund-LNURL address is scheduled at its expiry
// (proxy_expiry_refunds); every PROXY_EXPIRY_REFUND_INTERVAL_MS the job takes at most
// PROXY_EXPIRY_REFUND_BATCH due accounts, by that table's index, and pays each to its address
// through the refund route's own path (LightningPayments.refund: the balance claimed in one
// transaction, the melt journaled, the recovery finishing or giving back what a crash leaves).
// An account is taken by a conditional write, so of several processes running the job at once
// one works on it; a failed attempt waits out a backoff that doubles up to a day; an account with
// nothing left to pay leaves the schedule. Accounts without an address are never scheduled: their
// balance stays claimable by POST /v1/balance/refund.
import type { Database } from '../../db/index.js';
import type { LightningConfig } from '../common/lightning-config.js';
import type { LightningPayments } from './lightning-pay.js';
import { messageOf, type WalletLogger } from '../wallet/mint-journal.js';
import {
  expiryRefundCandidates,
  expiryRefundSettled,
  noteExpiryRefundError,
  takeExpiryRefund,
  unscheduleExpiryRefund,
  type ExpiryRefundCandidate,
} from './store.js';

/** Below two sats nothing is left to pay once the least fee reserve (one sat) is held. */
const MIN_REFUND_MSAT = 2_000;
const MAX_BACKOFF_MS = 24 * 60 * 60 * 1000;

export interface ExpiryRefundReport {
  /** Paid to the address. */
  paid: number;
  /** Sent, not confirmed by the mint yet: the balance stays held and the recovery finishes it. */
  pending: number;
  /** Not paid this time; the balance is whole and the account is tried again after its backoff. */
  failed: number;
}

/** When an account may be tried again after `attempts` attempts: the interval, doubled each time, at most a day. */
export function retryAt(now: number, intervalMs: number, attempts: number): number {
  return now + Math.min(MAX_BACKOFF_MS, intervalMs * 2 ** Math.min(attempts - 1, 20));
}

export class ExpiryRefunds {
  private running: Promise<ExpiryRefundReport> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private db: Database,
    private payments: LightningPayments,
    private config: Pick<LightningConfig, 'expiryRefundIntervalMs' | 'expiryRefundBatch'>,
    private log: WalletLogger,
  ) {}

  /** One pass over at most a batch of expired accounts that are due; `now` decides what is expired and due. */
  async runOnce(now = Date.now()): Promise<ExpiryRefundReport> {
    const report: ExpiryRefundReport = { paid: 0, pending: 0, failed: 0 };
    const { expiryRefundBatch: batch, expiryRefundIntervalMs: interval } = this.config;
    for (const candidate of await expiryRefundCandidates(this.db.kysely, now, batch)) {
      if (candidate.balanceMsat < MIN_REFUND_MSAT) {
        await unscheduleExpiryRefund(this.db.kysely, candidate.accountId, now);
        continue;
      }
      const attempt = candidate.attempts + 1;
      if (!(await takeExpiryRefund(this.db.kysely, candidate, retryAt(now, interval, attempt), now))) continue;
      report[await this.pay(candidate, attempt)]++;
    }
    if (report.paid + report.pending + report.failed > 0) this.log.info({ ...report }, 'expired keys refunded');
    return report;
  }

  private async pay(candidate: ExpiryRefundCandidate, attempt: number): Promise<keyof ExpiryRefundReport> {
    try {
      // A request that was in flight at the expiry still holds part of the balance: after it, then.
      if (candidate.availableMsat < MIN_REFUND_MSAT) throw new Error('requests in flight hold the balance');
      const answer = await this.payments.refund(candidate.accountId, candidate.address);
      await expiryRefundSettled(this.db.kysely, candidate.accountId, Date.now());
      return answer.status;
    } catch (error) {
      const reason = messageOf(error).slice(0, 500);
      // A note lost with the database must not end the pass: the backoff was set when it was taken.
      await noteExpiryRefundError(this.db.kysely, candidate.accountId, reason, Date.now()).catch(() => {});
      this.log.warn(
        { accountId: candidate.accountId, attempt, err: reason },
        'expired key not refunded to its address yet; tried again later',
      );
      return 'failed';
    }
  }

  /** Runs a pass every interval, one at a time, until stop(). */
  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.runOnce()
        .catch((error) => {
          this.log.error({ err: messageOf(error) }, 'expiry refund pass failed');
          return { paid: 0, pending: 0, failed: 0 };
        })
        .finally(() => {
          this.running = null;
        });
    }, this.config.expiryRefundIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
