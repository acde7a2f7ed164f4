// Group commit: steps arriving together run in one write transaction (or one statement). On SQLite a commit, not a
// statement, is the expensive part, so under load one commit serves many requests; on
// PostgreSQL several such transactions run at once, each on its own connection. Each step
// belongs to a key (a row the transaction locks, such as an account): a running transaction's
// keys are busy, and their next steps wait for the following one, so no two transactions of this
// process wait on each other's row locks. Measurements: bench/README.md.
/**
 * Runs a batch of steps atomically (in a transaction, or in one statement, which is its own
 * transaction); one result per step, in order.
 */
export type ApplySteps<S> = (steps: S[]) => Promise<unknown[]>;

export interface GroupCommitOptions<S> {
  /** The key of the row a step changes. */
  keyOf(step: S): number;
  /** Most steps one transaction takes. */
  maxBatch: number;
  /** Transactions at once (one on SQLite's single connection). */
  maxConcurrent: number;
}

type Queued<S> = S & {
  resolve(value: unknown): void;
  reject(error: unknown): void;
};

export class GroupCommit<S extends object> {
  private queue: Queued<S>[] = [];
  private scheduled = false;
  private inFlight = 0;
  /** Keys whose steps a running transaction has: their next steps wait for it. */
  private busyKeys = new Set<number>();

  constructor(
    private readonly apply: ApplySteps<S>,
    private readonly options: GroupCommitOptions<S>,
  ) {}

  /** Queues a step (a new object, which it keeps) for the next transaction; resolves with its result. */
  run<T>(step: S): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // The caller's fresh object becomes the queued step (a spread copy of it showed in profiles).
      const queued = step as Queued<S>;
      queued.resolve = resolve as (value: unknown) => void;
      queued.reject = reject;
      this.queue.push(queued);
      this.schedule();
    });
  }

  /** Starts transactions for what is queued, once the steps of this moment are in. */
  private schedule() {
    if (this.scheduled || this.queue.length === 0 || this.inFlight >= this.options.maxConcurrent) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.inFlight < this.options.maxConcurrent) {
        const batch = this.takeBatch();
        if (!batch.length) break;
        this.inFlight++;
        void this.runBatch(batch).finally(() => {
          this.inFlight--;
          for (const step of batch) this.busyKeys.delete(this.options.keyOf(step));
          this.schedule();
        });
      }
    });
  }

  /** The queued steps of keys no running transaction has, up to maxBatch. */
  private takeBatch(): Queued<S>[] {
    const { keyOf, maxBatch } = this.options;
    const batch: Queued<S>[] = [];
    const rest: Queued<S>[] = [];
    for (const step of this.queue) {
      (batch.length < maxBatch && !this.busyKeys.has(keyOf(step)) ? batch : rest).push(step);
    }
    this.queue = rest;
    for (const step of batch) this.busyKeys.add(keyOf(step));
    return batch;
  }

  /**
   * Runs the steps in one transaction. Each step should not fail on its own; if the transaction
   * fails anyway (a lost connection, say), nothing of it was kept, and each step is tried again in
   * a transaction of its own.
   */
  private async runBatch(batch: Queued<S>[]) {
    try {
      const results = await this.apply(batch);
      batch.forEach((step, i) => step.resolve(results[i]));
    } catch (error) {
      if (batch.length === 1) return batch[0].reject(error);
      await Promise.all(batch.map((step) => this.runBatch([step])));
    }
  }
}
