// The Lightning parts of the node, built once by ../service.ts: invoices in, payments out, the LNURL
// client, and their recovery pass (run with the wallet's, at start and periodically).
import type { Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import type { ProxyConfig } from '../common/config.js';
import { LightningInvoices, unfinishedLightningOps } from './lightning.js';
import { LightningPayments } from './lightning-pay.js';
import { Lnurl } from './lnurl.js';
import { messageOf, type WalletLogger } from '../wallet/mint-journal.js';
import type { RecoveryReport } from '../wallet/recovery.js';
import { claimOp } from '../wallet/store.js';
import type { NodeWallet } from '../wallet/wallet.js';

export interface Lightning {
  invoices: LightningInvoices;
  payments: LightningPayments;
  /** One pass over the unfinished mints and melts whose lease ran out. */
  recoverOnce(): Promise<RecoveryReport>;
}

export function buildLightning(db: Database, wallet: NodeWallet, config: ProxyConfig, log: WalletLogger): Lightning {
  const options = { mintTimeoutMs: config.mintTimeoutMs, maxInvoiceSats: config.lightning.maxInvoiceSats };
  const invoices = new LightningInvoices(db, wallet, options, log);
  const lnurl = new Lnurl({
    timeoutMs: config.lightning.lnurlTimeoutMs,
    allowHttpLoopback: config.lightning.lnurlAllowHttpLoopback,
  });
  const payments = new LightningPayments(db, wallet, lnurl, invoices.leaseMs, log);

  async function recoverOnce(): Promise<RecoveryReport> {
    const report: RecoveryReport = { done: 0, failed: 0, pending: 0 };
    for (const candidate of await unfinishedLightningOps(db)) {
      const now = Date.now();
      const op = await claimOp(db.kysely, candidate.id, now + invoices.leaseMs, now);
      if (!op) continue; // another process took it
      try {
        await (op.kind === 'mint' ? invoices.resume(op) : payments.resume(op));
        report.done++;
      } catch (error) {
        if (error instanceof HttpError && error.status < 500) report.failed++;
        else report.pending++;
        log.warn({ opId: op.id, kind: op.kind, err: messageOf(error) }, 'lightning operation not finished yet');
      }
    }
    return report;
  }

  return { invoices, payments, recoverOnce };
}
