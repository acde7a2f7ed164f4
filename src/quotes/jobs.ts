// The import queue: jobs live in the quote_imports table, so they survive a restart and any
// process on the same database can run them. A process claims a queued job with one atomic
// UPDATE (status queued → running), runs it, and polls for more. At start, jobs left
// "running" for longer than QUOTES_IMPORT_STALE_S by a dead process are queued again
// (at most 3 attempts), then failed with a clear message.
// A process runs as many jobs at once as its import pool has threads: each file is read in a
// thread (file-worker.ts), then applied on this thread in the order the jobs were claimed, so
// the last upload of a file wins as before. The other jobs wait in the table, not in memory.
import type { FastifyBaseLogger } from 'fastify';
import { writeTransaction, type Database } from '../db/index.js';
import type { QuotesConfig } from './config.js';
import type { FilePool, ReadFile } from './file-worker.js';
import { applyImport, failureMessage } from './importer.js';
import {
  claimImport,
  failImport,
  failStaleImports,
  requeueStaleImports,
  type ClaimedImport,
  type Upload,
} from './store.js';

const MAX_ATTEMPTS = 3;

export class ImportQueue {
  private timer: NodeJS.Timeout | null = null;
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

  async start(): Promise<void> {
    await this.recoverStale();
    this.timer = setInterval(() => this.kick(), this.config.importPollMs);
    this.timer.unref();
    this.kick();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.filling;
    await Promise.all(this.active);
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
      .catch((error) => this.log.error({ err: error }, 'import queue failed'))
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
    return claimImport(this.db.kysely, this.now(), upload);
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
      const message = failureMessage(error);
      if (!message) this.log.error({ err: error, importId: job.id }, 'import failed unexpectedly');
      await this.fail(job.id, message ?? 'the import failed because of an internal error').catch((failure) => {
        this.log.error({ err: failure, importId: job.id }, 'could not mark the import failed');
      });
    }
  }

  private async fail(id: number, message: string): Promise<void> {
    await writeTransaction(this.db, (trx) => failImport(trx, id, message, this.now()));
  }

  private async recoverStale(): Promise<void> {
    const limit = this.now() - this.config.importStaleS * 1000;
    const message = `the import was interrupted ${MAX_ATTEMPTS} times (server restarts); upload the file again`;
    await writeTransaction(this.db, (trx) => failStaleImports(trx, limit, MAX_ATTEMPTS, message, this.now()));
    const requeued = await requeueStaleImports(this.db.kysely, limit);
    if (requeued) this.log.warn({ count: requeued }, 'interrupted imports queued again');
  }
}
