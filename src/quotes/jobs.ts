// The import queue: jobs live in the quote_imports table, so they survive a restart and any
// process on the same database can run them. A process claims a queued job with one atomic
// UPDATE (status queued → running), runs it, and polls for more. At start, jobs left
// "running" for longer than QUOTES_IMPORT_STALE_S by a dead process are queued again
// (at most 3 attempts), then failed with a clear message.
// A process runs as many jobs at once as its import pool has threads: each file is read in a
// thread (file-worker.ts), then applied on this thread in the order the jobs were claimed, so
// the last upload of a file wins as before. The other jobs wait in the table, not in memory.
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../db/index.js';
import type { QuotesConfig } from './config.js';
import type { FilePool, ReadFile } from './file-worker.js';
import { applyImport, failureMessage } from './importer.js';
import { dropPayloads, type ImportRow } from './store.js';

const MAX_ATTEMPTS = 3;

type Job = ImportRow & { payload: Buffer | null };

export class ImportQueue {
  private timer: NodeJS.Timeout | null = null;
  private filling: Promise<void> | null = null;
  private again = false;
  private closed = false;
  /** Jobs being read or applied, at most one per pool thread. */
  private active = new Set<Promise<void>>();
  /** The last claimed job's application: each job applies after the one claimed before it. */
  private applied: Promise<void> = Promise.resolve();

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

  /** Claims queued jobs while a thread is free; calls during a pass schedule one more. */
  kick(): void {
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

  private async claim(): Promise<Job | null> {
    const kysely = this.db.kysely;
    for (let tries = 0; tries < 5; tries++) {
      const next = await kysely
        .selectFrom('quote_imports')
        .select('id')
        .where('status', '=', 'queued')
        .orderBy('id')
        .limit(1)
        .executeTakeFirst();
      if (!next) return null;
      const claimed = await kysely
        .updateTable('quote_imports')
        .set((eb) => ({ status: 'running', started_at: this.now(), attempts: eb('attempts', '+', 1) }))
        .where('id', '=', next.id)
        .where('status', '=', 'queued')
        .executeTakeFirst();
      if (Number(claimed.numUpdatedRows) === 1) {
        const job = (await kysely
          .selectFrom('quote_imports')
          .selectAll()
          .where('id', '=', next.id)
          .executeTakeFirstOrThrow()) as ImportRow;
        const stored = await kysely
          .selectFrom('quote_import_payloads')
          .select('payload')
          .where('import_id', '=', next.id)
          .executeTakeFirst();
        return { ...job, payload: stored?.payload ?? null };
      }
    }
    return null;
  }

  /** Reads the file now, applies it after the previously claimed job. Never rejects. */
  private process(job: Job): Promise<void> {
    const started = this.now();
    const reading = job.payload ? this.pool.read(job.format, job.payload) : Promise.reject(new Error('no payload'));
    reading.catch(() => {}); // awaited in apply, maybe after the previous job: not unhandled meanwhile
    this.applied = this.applied.then(() => this.apply(job, reading, started));
    return this.applied;
  }

  private async apply(job: Job, reading: Promise<ReadFile>, started: number): Promise<void> {
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
    await this.db.kysely.transaction().execute(async (trx) => {
      const failed = await trx
        .updateTable('quote_imports')
        .set({ status: 'failed', message, finished_at: this.now() })
        .where('id', '=', id)
        .where('status', '=', 'running')
        .executeTakeFirst();
      if (Number(failed.numUpdatedRows)) await dropPayloads(trx, [id]);
    });
  }

  private async recoverStale(): Promise<void> {
    const limit = this.now() - this.config.importStaleS * 1000;
    const kysely = this.db.kysely;
    await kysely.transaction().execute(async (trx) => {
      const failed = await trx
        .updateTable('quote_imports')
        .set({
          status: 'failed',
          message: `the import was interrupted ${MAX_ATTEMPTS} times (server restarts); upload the file again`,
          finished_at: this.now(),
        })
        .where('status', '=', 'running')
        .where('started_at', '<=', limit)
        .where('attempts', '>=', MAX_ATTEMPTS)
        .returning('id')
        .execute();
      await dropPayloads(
        trx,
        failed.map((row) => Number(row.id)),
      );
    });
    const requeued = await kysely
      .updateTable('quote_imports')
      .set({ status: 'queued' })
      .where('status', '=', 'running')
      .where('started_at', '<=', limit)
      .executeTakeFirst();
    if (Number(requeued.numUpdatedRows)) {
      this.log.warn({ count: Number(requeued.numUpdatedRows) }, 'interrupted imports queued again');
    }
  }
}
