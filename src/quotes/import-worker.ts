// The CPU work of an import, off the event loop: reading the uploaded file in its format and
// counting the words of its strings run in a pool of worker threads (piscina), so a hostile or
// huge upload never stalls the requests of any service. This module is both the pool (main
// thread) and the task (worker thread, its default export).
import '../noproto.js';
import { Buffer } from 'node:buffer';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { FORMATS, FormatError, isFileFormat, type ParsedUnit } from './formats/index.js';
import { countWords } from './wordcount.js';

export interface ReadTask {
  format: string;
  payload: Uint8Array;
  /** Told when the thread starts on the file: the time limit counts from then. */
  started: MessagePort;
}

/** A unit with the words of its source (and plural). */
export type CountedUnit = ParsedUnit & { words: number };

export interface ReadFile {
  units: CountedUnit[];
  meta: Record<string, unknown>;
}

// Units travel as JSON text, a few thousand a batch: structured cloning 100k units cost the main
// thread 0.4 s in one go; parsing a batch of JSON takes a millisecond or two, between requests.
const BATCH = 2000;
type ReadResult = { ok: true; batches: string[]; meta: Record<string, unknown> } | { ok: false; message: string };

/**
 * The task, in a worker thread. A problem with the file is a result, not an exception: an
 * error's class does not survive the way back.
 */
export default async function readFile(task: ReadTask): Promise<ReadResult> {
  task.started.postMessage(null);
  task.started.close();
  const { format, payload } = task;
  try {
    if (!isFileFormat(format)) return { ok: false, message: `unknown file_format ${format}` };
    const parsed = await FORMATS[format].parse(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength));
    if (parsed.units.length === 0) return { ok: false, message: `no strings found: is this really a ${format} file?` };
    const batches: string[] = [];
    for (let i = 0; i < parsed.units.length; i += BATCH) {
      const units = parsed.units.slice(i, i + BATCH) as CountedUnit[];
      for (const unit of units) unit.words = countWords(unit.source) + countWords(unit.sourcePlural ?? '');
      batches.push(JSON.stringify(units));
    }
    return { ok: true, batches, meta: parsed.meta };
  } catch (error) {
    if (error instanceof FormatError) return { ok: false, message: error.message };
    throw error;
  }
}

/** A problem with the uploaded file (its message is for the uploader). */
export class ReadError extends Error {}

export interface PoolOptions {
  threads: number;
  /** Longest time one file may take; then its thread is stopped and the import fails. */
  timeoutMs: number;
}

/** The worker threads of one process; they start on the first import. */
export class ImportPool {
  private pool: Piscina<ReadTask, ReadResult>;

  constructor(private options: PoolOptions) {
    // Compiled, this module is a .js file that Node loads as it is; run from the TypeScript
    // sources (tsx, vitest), the threads need tsx's loader too.
    const typescript = import.meta.url.endsWith('.ts') && !process.execArgv.includes('tsx');
    // A worker refuses process-wide flags such as --disable-proto (npm start, the tests): it
    // inherits them, and imports noproto.ts itself for the other ways of starting.
    const execArgv = process.execArgv.filter((flag) => !flag.startsWith('--disable-proto'));
    this.pool = new Piscina({
      filename: import.meta.url,
      execArgv: typescript ? [...execArgv, '--import', 'tsx'] : execArgv,
      minThreads: 0,
      maxThreads: options.threads,
      idleTimeout: 600_000,
      // The import queue hands over at most one file per thread; waiting files stay in the table.
      maxQueue: options.threads,
      // Below the main thread's priority (Linux): requests are served first on a busy machine.
      niceIncrement: 10,
    });
  }

  get threads(): number {
    return this.options.threads;
  }

  /** Reads one uploaded file; throws ReadError for a problem with the file. */
  async read(format: string, payload: Uint8Array): Promise<ReadFile> {
    const { timeoutMs } = this.options;
    // The limit counts from the start of the work, not from a thread's start-up.
    const abort = new AbortController();
    const { port1, port2 } = new MessageChannel();
    let timer: NodeJS.Timeout | undefined;
    port1.once('message', () => (timer = setTimeout(() => abort.abort(), timeoutMs)));
    let result: ReadResult;
    try {
      const task = { format, payload, started: port2 };
      result = await this.pool.run(task, { signal: abort.signal, transferList: [port2] });
    } catch (error) {
      if (abort.signal.aborted) {
        const limit = `${timeoutMs / 1000} s (QUOTES_IMPORT_TIMEOUT_S)`;
        throw new ReadError(`reading the file took longer than ${limit}; split it into smaller files`);
      }
      if ((error as Error).message === 'Task queue is at limit') {
        throw new ReadError('the server is busy with other imports; upload the file again later');
      }
      throw error;
    } finally {
      clearTimeout(timer);
      port1.close();
    }
    if (!result.ok) throw new ReadError(result.message);
    const units: CountedUnit[] = [];
    for (const batch of result.batches) {
      for (const unit of JSON.parse(batch) as CountedUnit[]) units.push(unit);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return { units, meta: result.meta };
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}
