// SQLite checkpoints (copies its write-ahead log back into the database file, two fsyncs) on the
// connection whose commit crosses wal_autocheckpoint: on the event loop, stalling requests. A worker
// thread with its own connection copies the log a few times a second instead (a passive checkpoint
// waits for no reader or writer).
// Under steady writes the worker never sees the log copied to its very end, where the next commit
// starts it over; so the main connection keeps an autocheckpoint, at 4,000 pages instead of 1,000,
// that finds little left to copy and keeps the log bounded (also if the worker stops).
// Measurements: bench/README.md (Measurements behind the code).
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Pages of log after which the main connection checkpoints itself (16 MB at 4 KB pages). */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 4000;
const INTERVAL_MS = 200;

// Plain CommonJS, evaluated as the worker's source: no loader or build step is involved.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
const checkpoint = () => {
  // Passive passes until the log is copied up to its end (then the next commit starts the log
  // over), a few at most: under steady writes it is caught up on the next tick instead.
  // A failed pass (a full disk, an I/O error) is tried again on the next tick: thrown, it would
  // end the worker and checkpoints with it for good.
  try {
    for (let pass = 0; pass < 3; pass++) {
      const [state] = db.pragma('wal_checkpoint(PASSIVE)');
      if (state.busy || state.checkpointed >= state.log) return;
    }
  } catch {}
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export interface Checkpointer {
  stop(): Promise<void>;
}

export function startCheckpointer(file: string): Checkpointer {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { file, driver: createRequire(import.meta.url).resolve('better-sqlite3'), intervalMs: INTERVAL_MS },
  });
  worker.unref();
  const exited = once(worker, 'exit');
  // A failed worker leaves checkpoints to the fallback autocheckpoint; the process goes on.
  worker.on('error', () => {});
  return {
    async stop() {
      worker.ref(); // the process waits for the worker's exit (nothing else may be left to wait for)
      worker.postMessage('stop');
      await exited;
    },
  };
}
