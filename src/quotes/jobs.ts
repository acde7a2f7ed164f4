// The import queue: jobs live in the quote_imports table, so they survive a restart and any
// process on the same database can run them. A process claims a queued job with one atomic
// UPDATE (status queued → running), runs it, and polls for more. At start, jobs left
// "running" for longer than QUOTES_IMPORT_STALE_S by a dead process are queued again
// (at most 3 attempts), then failed with a clear message.
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../db/index.js';
import type { QuotesConfig } from './config.js';
import { failureMessage, runImport } from './importer.js';
import { dropPayloads, type ImportRow } from './store.js';

const MAX_ATTEMPTS = 3;

export class ImportQueue {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private closed = false;

  constructor(private db: Database, private config: QuotesConfig, private log: FastifyBaseLogger, private now: () => number = Date.now) {}

  async start(): Promise<void> {
    await this.recoverStale();
    this.timer = setInterval(() => this.kick(), this.config.importPollMs);
    this.timer.unref();
    this.kick();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** Runs queued jobs until none is left; calls during a run schedule one more pass. */
  kick(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((error) => this.log.error({ err: error }, 'import queue failed'))
      .finally(() => {
        this.running = null;
        if (this.again && !this.closed) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async drain(): Promise<void> {
    while (!this.closed) {
      const job = await this.claim();
      if (!job) return;
      await this.process(job);
    }
  }

  private async claim(): Promise<(ImportRow & { payload: Buffer | null }) | null> {
    const kysely = this.db.kysely;
    for (let tries = 0; tries < 5; tries++) {
      const next = await kysely.selectFrom('quote_imports').select('id').where('status', '=', 'queued').orderBy('id').limit(1).executeTakeFirst();
      if (!next) return null;
      const claimed = await kysely
        .updateTable('quote_imports')
        .set((eb) => ({ status: 'running', started_at: this.now(), attempts: eb('attempts', '+', 1) }))
        .where('id', '=', next.id)
        .where('status', '=', 'queued')
        .executeTakeFirst();
      if (Number(claimed.numUpdatedRows) === 1) {
        const job = (await kysely.selectFrom('quote_imports').selectAll().where('id', '=', next.id).executeTakeFirstOrThrow()) as ImportRow;
        const stored = await kysely.selectFrom('quote_import_payloads').select('payload').where('import_id', '=', next.id).executeTakeFirst();
        return { ...job, payload: stored?.payload ?? null };
      }
    }
    return null;
  }

  private async process(job: ImportRow & { payload: Buffer | null }): Promise<void> {
    const started = this.now();
    try {
      if (!job.payload) throw new Error('import has no payload');
      const outcome = await runImport(this.db.kysely, this.db.dialect, job, Buffer.from(job.payload), this.now);
      this.log.info({ importId: job.id, strings: outcome.strings, ms: this.now() - started }, 'import completed');
    } catch (error) {
      const message = failureMessage(error);
      if (!message) this.log.error({ err: error, importId: job.id }, 'import failed unexpectedly');
      await this.fail(job.id, message ?? 'the import failed because of an internal error');
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
        .set({ status: 'failed', message: `the import was interrupted ${MAX_ATTEMPTS} times (server restarts); upload the file again`, finished_at: this.now() })
        .where('status', '=', 'running')
        .where('started_at', '<=', limit)
        .where('attempts', '>=', MAX_ATTEMPTS)
        .returning('id')
        .execute();
      await dropPayloads(trx, failed.map((row) => Number(row.id)));
    });
    const requeued = await kysely
      .updateTable('quote_imports')
      .set({ status: 'queued' })
      .where('status', '=', 'running')
      .where('started_at', '<=', limit)
      .executeTakeFirst();
    if (Number(requeued.numUpdatedRows)) this.log.warn({ count: Number(requeued.numUpdatedRows) }, 'interrupted imports queued again');
  }
}
