// The import queue: jobs live in the quote_imports table, so they survive a restart and any
// process on the same database can run them. A process claims a queued job with one atomic
// UPDATE (status queued → running), runs it, and polls for more.
// A running job is leased: its process renews the lease every third of QUOTES_IMPORT_STALE_S
// while it works on the job, and every process queues again (at most 3 attempts, then fails with
// a clear message) a running job whose lease ran out: its process died, or lost the database for
// longer than the lease. Each try of a job is fenced by its attempt number: only the try that
// claimed it last may complete or fail it, so a job is never applied twice.
// A job whose run meets a database outage is queued again by its own process as soon as the
// database answers (retryWhileUnavailable), and runs again at once.
// A process runs as many jobs at once as its import pool has threads: each file is read in a
// thread (file-worker.ts), then applied on this thread in the order the jobs were claimed, so
// the last upload of a file wins as before. The other jobs wait in the table, not in memory.
import type { FastifyBaseLogger } from 'fastify';
import { databaseOutage } from '../../db/errors.js';
import { writeTransaction, type Database } from '../../db/index.js';
import { retryWhileUnavailable } from '../../db/retry.js';
import type { QuotesConfig } from '../config.js';
import type { FilePool, ReadFile } from './file-worker.js';
import { applyImport, failureMessage, ImportLeaseLost } from './importer.js';
import {
  claimImport,
  failImport,
  failStaleImports,
  renewImportLeases,
  requeueImport,
  requeueStaleImports,
  type ClaimedImport,
  type HeldImport,
  type Upload,
} from '../store/imports.js';

const MAX_ATTEMPTS = 3;
const INTERRUPTED =
  `the import was interrupted ${MAX_ATTEMPTS} times (server restarts or database outages); ` + 'upload the file again';
const STORAGE_FULL = 'the database ran out of space during the import; upload the file again once space is freed';

export class ImportQueue {
  private timer: NodeJS.Timeout | null = null;
  private leaseTimer: NodeJS.Timeout | null = null;
  private maintaining: Promise<void> | null = null;
  /** Aborted at close: a job's last word waiting for the database stops waiting (its lease runs out). */
  private stopping = new AbortController();
  /** The jobs this process claimed and has not ended: their leases are renewed. */
  private held = new Map<number, HeldImport>();
  private filling: Promise<void> | null = null;
  private again = false;
  private closed = false;
  /** Jobs being read or applied, at most one per pool thread. */
  private active = new Set<Promise<void>>();
  /** The last claimed job's application: each job applies after the one claimed before it. */
  private applied: Promise<void> = Promise.resolve();
  /**
   * The last upload to this process, until a job is claimed: claiming it then does not read its
   * payload back (0.35 s for 6.5 MB of bytea on PostgreSQL, bench/README.md). One file at most.
   */
  private lastUpload: Upload | null = null;

  constructor(
    private db: Database,
    private config: QuotesConfig,
    private pool: FilePool,
    private log: FastifyBaseLogger,
    private now: () => number = Date.now,
  ) {}

  private get leaseMs(): number {
    return this.config.importStaleS * 1000;
  }

  async start(): Promise<void> {
    await this.maintain();
    this.timer = setInterval(() => this.kick(), this.config.importPollMs);
    this.timer.unref();
    this.leaseTimer = setInterval(() => void this.maintain(), Math.ceil(this.leaseMs / 3));
    this.leaseTimer.unref();
    this.kick();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopping.abort();
    if (this.timer) clearInterval(this.timer);
    await this.filling;
    await Promise.all(this.active);
    // Leases renewed until the last job ended: another process must not take one over meanwhile.
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    await this.maintaining;
  }

  /**
   * Claims queued jobs while a thread is free; calls during a pass schedule one more. `upload`:
   * the job just stored by this process, with its payload.
   */
  kick(upload?: Upload): void {
    if (upload) this.lastUpload = upload;
    if (this.closed) return;
    if (this.filling) {
      this.again = true;
      return;
    }
    this.filling = this.fill()
      .catch((error) =>
        databaseOutage(error)
          ? this.log.warn({ err: error }, 'import queue: the database is away; polling on')
          : this.log.error({ err: error }, 'import queue failed'),
      )
      .finally(() => {
        this.filling = null;
        if (this.again && !this.closed) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async fill(): Promise<void> {
    while (!this.closed && this.active.size < this.pool.threads) {
      const job = await this.claim();
      if (!job) return;
      this.held.set(job.id, { id: job.id, attempts: job.attempts });
      const run: Promise<void> = this.process(job).finally(() => {
        this.active.delete(run);
        this.kick();
      });
      this.active.add(run);
    }
  }

  private claim(): Promise<ClaimedImport | null> {
    const upload = this.lastUpload;
    this.lastUpload = null;
    const now = this.now();
    return claimImport(this.db.kysely, now, now + this.leaseMs, upload);
  }

  /** Reads the file now, applies it after the previously claimed job. Never rejects. */
  private process(job: ClaimedImport): Promise<void> {
    const started = this.now();
    const reading = job.payload
      ? this.pool.read(job.format, job.locale, job.payload)
      : Promise.reject(new Error('no payload'));
    reading.catch(() => {}); // awaited in apply, maybe after the previous job: not unhandled meanwhile
    this.applied = this.applied.then(() => this.apply(job, reading, started));
    return this.applied;
  }

  private async apply(job: ClaimedImport, reading: Promise<ReadFile>, started: number): Promise<void> {
    try {
      const outcome = await applyImport(this.db, job, await reading, this.now);
      this.log.info({ importId: job.id, strings: outcome.strings, ms: this.now() - started }, 'import completed');
    } catch (error) {
      await this.end(job, error);
    } finally {
      this.held.delete(job.id);
    }
  }

  /**
   * A job that did not complete: queued again when the database went away under it (failed after
   * MAX_ATTEMPTS tries), else failed with a message. The write waits for the database's return;
   * if shutdown comes first, the job's lease runs out and another process, or this one's restart,
   * queues it again.
   */
  private async end(job: ClaimedImport, error: unknown): Promise<void> {
    if (error instanceof ImportLeaseLost) {
      this.log.warn({ importId: job.id }, error.message);
      return;
    }
    const outage = databaseOutage(error);
    const again = outage === 'unavailable' && job.attempts < MAX_ATTEMPTS;
    let message = failureMessage(error);
    if (outage) message = outage === 'storage-full' ? STORAGE_FULL : INTERRUPTED;
    else if (!message) this.log.error({ err: error, importId: job.id }, 'import failed unexpectedly');
    const at = this.now();
    try {
      await retryWhileUnavailable(
        () =>
          writeTransaction(this.db, async (trx) => {
            if (again) await requeueImport(trx, job);
            else await failImport(trx, job, message ?? 'the import failed because of an internal error', at);
          }),
        this.stopping.signal,
      );
    } catch (failure) {
      this.log.error({ err: failure, importId: job.id }, 'could not end the import; its lease will run out');
      return;
    }
    if (!again) return;
    this.log.warn(
      { err: error, importId: job.id, attempt: job.attempts },
      'import cut by a database outage; queued again',
    );
    this.kick();
  }

  /**
   * Renews this process's leases, then queues again (or fails, after MAX_ATTEMPTS) the running jobs
   * whose lease ran out. Never rejects: while the database is away, the next turn tries again.
   */
  private maintain(): Promise<void> {
    this.maintaining ??= this.renewAndRecover()
      .catch((error) => this.log.warn({ err: error }, 'import leases not renewed; trying again'))
      .finally(() => {
        this.maintaining = null;
      });
    return this.maintaining;
  }

  private async renewAndRecover(): Promise<void> {
    const now = this.now();
    // Own leases first: this process's jobs are never taken for stale.
    await renewImportLeases(this.db.kysely, [...this.held.values()], now + this.leaseMs);
    await writeTransaction(this.db, (trx) => failStaleImports(trx, now, MAX_ATTEMPTS, INTERRUPTED));
    const requeued = await requeueStaleImports(this.db.kysely, now);
    if (!requeued) return;
    this.log.warn({ count: requeued }, 'imports no process worked on queued again');
    this.kick();
  }
}
