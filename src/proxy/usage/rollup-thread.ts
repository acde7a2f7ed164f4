// The usage job's runs in a worker thread of their own where the database is an SQLite file. SQLite
// does its work in the calling thread: on the event loop, each 4,000-row batch held every request
// for a few milliseconds, every batch of the last ten seconds back to back (a node serving 10,000
// billed requests a second rolls up 25 of them each time; bench/README.md, run T). The thread has
// its own connection to the file; the rollup's transaction takes SQLite's write lock as it would on
// the main connection, and the main connection's billing waits for it between tries (src/db/index.ts).
// This module is both the thread's handle (main thread) and its task (the default export); piscina
// runs it, as it runs the file threads of the quotation API.
import '../../noproto.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { workerData } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { openDatabase, type Database } from '../../db/index.js';
import { workerExecArgv } from '../../worker-exec-argv.js';
import { rollUpOnce } from './store.js';

type Task = 'roll-up' | 'close';

/**
 * The thread's runs are short, with a pause between them: while a run holds SQLite's write lock the
 * billing's transactions wait (trying again after 1, 2, 4… ms), and back-to-back runs of 4,000 rows
 * kept them waiting through a whole catch-up (p99.9 of billed requests 53–61 → 103–110 ms at
 * 5,000 a second; bench/README.md, run T). A run of 1,000 rows holds the lock under a millisecond.
 */
const THREAD_BATCH_ROWS = 1000;
const PAUSE_BETWEEN_RUNS_MS = 10;

export class RollUpThread {
  private readonly pool: Piscina<Task, void>;

  /** A thread for the SQLite database `file`: started by the first run (not with the node), then kept. */
  constructor(file: string) {
    this.pool = new Piscina({
      filename: import.meta.url,
      execArgv: workerExecArgv(import.meta.url),
      workerData: { file },
      minThreads: 0,
      maxThreads: 1,
      idleTimeout: Infinity,
      // Below the main thread's priority (Linux): requests are served first on a busy machine.
      niceIncrement: 10,
    });
  }

  /** Rolls up everything the ledger has (as many batches as it takes). */
  rollUp(): Promise<void> {
    return this.pool.run('roll-up');
  }

  /** Closes the thread's connection, then the thread (none to close if no run started one). */
  async close(): Promise<void> {
    if (this.pool.threads.length > 0) await this.pool.run('close').catch(() => {});
    await this.pool.destroy();
  }
}

// --- In the thread --------------------------------------------------------------------------------

let database: Promise<Database> | null = null;

export default async function task(kind: Task): Promise<void> {
  if (kind === 'close') {
    const open = database;
    database = null;
    await (await open)?.close();
    return;
  }
  database ??= openDatabase({ kind: 'sqlite', file: (workerData as { file: string }).file }, { checkpoints: false });
  // A database that could not be opened is opened again at the next run.
  const db = await database.catch((error: unknown) => {
    database = null;
    throw error;
  });
  while ((await rollUpOnce(db, Date.now(), THREAD_BATCH_ROWS)).more) await sleep(PAUSE_BETWEEN_RUNS_MS);
}
