// Start-up recovery and its periodic repeat: finishes every mint operation a crash, a lost
// answer or an unreachable mint left unfinished. An operation is touched only once its lease
// ran out (no process is working on it), and its completion is conditional on its state, so
// several processes on one PostgreSQL can run this at once and still credit exactly once.
import { HttpError } from '../../http/errors.js';
import type { NodeWallet, WalletLogger } from './wallet.js';

export interface RecoveryReport {
  done: number;
  failed: number;
  pending: number;
}

export interface Recovery {
  /** One pass over the unfinished operations. */
  runOnce(): Promise<RecoveryReport>;
  stop(): Promise<void>;
}

export async function recoverOnce(wallet: NodeWallet, log: WalletLogger): Promise<RecoveryReport> {
  const report: RecoveryReport = { done: 0, failed: 0, pending: 0 };
  for (const candidate of await wallet.unfinishedOps()) {
    const op = await wallet.claim(candidate.id);
    if (!op) continue; // another process took it
    try {
      if (op.state === 'preparing') await wallet.abandonPreparing(op);
      else await wallet.drive(op, false);
      report.done++;
    } catch (error) {
      if (error instanceof HttpError && error.status === 503 && error.options.code !== 'operation_interrupted') {
        report.pending++;
      } else if (error instanceof HttpError) report.failed++;
      else {
        report.pending++;
        log.error(
          { opId: op.id, err: error instanceof Error ? error.message : String(error) },
          'recovery of a mint operation failed',
        );
      }
    }
  }
  if (report.done + report.failed + report.pending > 0) log.info({ ...report }, 'wallet recovery pass');
  return report;
}

/** Runs a pass now and then every `intervalMs`, one pass at a time; `more` passes follow the wallet's. */
export function startRecovery(
  wallet: NodeWallet,
  intervalMs: number,
  log: WalletLogger,
  more: (() => Promise<RecoveryReport>)[] = [],
): Recovery {
  let running: Promise<RecoveryReport> | null = null;
  let stopped = false;
  const pass = async () => {
    const report = await recoverOnce(wallet, log);
    for (const next of more) {
      const r = await next();
      report.done += r.done;
      report.failed += r.failed;
      report.pending += r.pending;
    }
    return report;
  };
  const runOnce = () => {
    running ??= pass()
      .catch((error) => {
        log.error({ err: error instanceof Error ? error.message : String(error) }, 'wallet recovery pass failed');
        return { done: 0, failed: 0, pending: 0 };
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  const timer = setInterval(() => {
    if (!stopped) void runOnce();
  }, intervalMs);
  timer.unref();
  void runOnce();
  return {
    runOnce,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
