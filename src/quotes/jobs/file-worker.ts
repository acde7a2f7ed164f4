// The CPU work on whole files, off the event loop: reading an uploaded file in its format and
// counting the words of its strings, and writing a file for export, run in one pool of worker
// threads (piscina), so a hostile or huge file never stalls the requests of any service. This
// module is both the pool (main thread) and the task (worker thread, its default export), which
// dispatches on the task's kind.
import '../../noproto.js';
import { Buffer } from 'node:buffer';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { FORMATS, FormatError, isFileFormat } from '../formats/index.js';
import type { ExportEntry, ExportRequest, ParsedUnit } from '../formats/index.js';
import { readScreenshots, type ScreenshotsRead } from './screenshot-reader.js';
import { countWords } from './wordcount.js';
import { workerExecArgv } from '../../worker-exec-argv.js';

export interface ReadTask {
  kind: 'read';
  format: string;
  /** The upload's locale: which language a multilingual file is read in, and its plural categories. */
  locale: string;
  payload: Uint8Array;
  /** Where the thread says what it read, in order (ReadMessage): the time limit counts from its first message. */
  port: MessagePort;
}

/** A unit with the words of its source (and plural). */
export type CountedUnit = ParsedUnit & { words: number };

/**
 * A unit on its way from the thread: an array, not an object, so a batch's JSON has no field
 * names (100k PO units: 11 MB instead of 26 MB, parsed on the main thread in about half the time).
 */
type UnitTuple = [
  key: string,
  context: string | null,
  source: string,
  sourcePlural: string | null,
  words: number,
  forms: string[],
  untranslated: boolean | null,
  fuzzy: boolean,
  stale: boolean,
  previous: string | null,
  description: string | null,
  lengthLimit: string | null,
];

/**
 * What the thread posts about a file, in this order: `started` when it begins; then the file's
 * meta, or the problem that stops it (a problem with the file is a message, not an exception: an
 * error's class does not survive the way back); then its units, in batches of JSON UnitTuples as
 * they are counted; then `end`.
 */
type ReadMessage =
  { started: true } | { meta: Record<string, unknown> } | { problem: string } | { batch: string } | { end: true };

/** A file read by the pool: its meta, then its units in batches as the thread counts them. */
export interface ReadFile {
  meta: Record<string, unknown>;
  /** The units in file order; throws ReadError when the thread stops (time limit) before the end. */
  batches: AsyncIterable<CountedUnit[]>;
}

/** One string of an exported file with its translation, as the database gives it. */
export type ExportRow = [
  key: string,
  context: string | null,
  source: string,
  sourcePlural: string | null,
  /** JSON text of the forms, null without a translation. */
  forms: string | null,
  fuzzy: number | null,
  stale: number | null,
  previous: string | null,
  description: string | null,
  lengthLimit: string | null,
];

/** What a writer needs but the strings, which travel as JSON batches of ExportRows. */
export type WriteJob = Omit<ExportRequest, 'entries' | 'meta'> & { format: string; meta: string; batches: string[] };

interface WriteTask extends WriteJob {
  kind: 'write';
}

/** A screenshot upload's body as it arrived (screenshot-reader.ts). */
interface ScreenshotsTask {
  kind: 'screenshots';
  type: 'json' | 'form';
  body: Uint8Array;
  maxBytes: number;
}

// Units travel as JSON text, a few thousand a batch: structured cloning 100k units cost the main
// thread 0.4 s in one go; parsing a batch of JSON takes a millisecond or two, between requests.
// They are posted as they are counted, so the main thread writes the first batches while the
// thread counts the rest. An export's rows go the other way the same way; the written file comes
// back transferred.
export const BATCH = 2000;

/** Starts a thread (loading this module) ahead of the file it will read. */
interface WarmTask {
  kind: 'warm';
}

type Task = ReadTask | WriteTask | ScreenshotsTask | WarmTask;

/** The task, in a worker thread. */
export default async function runTask(task: Task): Promise<void | Uint8Array | ScreenshotsRead> {
  if (task.kind === 'warm') return;
  if (task.kind === 'screenshots') return readScreenshots(task.type, task.body, task.maxBytes);
  return task.kind === 'read' ? readFile(task) : writeFile(task);
}

/** Reads an upload, posting what it read on the task's port (ReadMessage). */
async function readFile(task: ReadTask): Promise<void> {
  const { format, locale, payload, port } = task;
  const post = (message: ReadMessage) => port.postMessage(message);
  post({ started: true });
  try {
    if (!isFileFormat(format)) return post({ problem: `unknown file_format ${format}` });
    const bytes = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
    const parsed = await FORMATS[format].parse(bytes, { locale });
    if (parsed.units.length === 0) return post({ problem: `no strings found: is this really a ${format} file?` });
    post({ meta: parsed.meta });
    for (let i = 0; i < parsed.units.length; i += BATCH) {
      const tuples = parsed.units.slice(i, i + BATCH).map((unit): UnitTuple => {
        const words = countWords(unit.source) + countWords(unit.sourcePlural ?? '');
        const { key, context, source, sourcePlural, forms, untranslated, fuzzy, stale } = unit;
        const notes = [unit.previous ?? null, unit.description ?? null, unit.lengthLimit ?? null] as const;
        return [key, context, source, sourcePlural, words, forms, untranslated ?? null, fuzzy, stale, ...notes];
      });
      post({ batch: JSON.stringify(tuples) });
    }
    post({ end: true });
  } catch (error) {
    if (error instanceof FormatError) return post({ problem: error.message });
    throw error;
  } finally {
    port.close();
  }
}

async function writeFile(task: WriteTask): Promise<Uint8Array> {
  const { kind: _kind, format, batches, meta, ...request } = task;
  if (!isFileFormat(format)) throw new Error(`unknown file format ${format}`);
  const entries: ExportEntry[] = [];
  for (const batch of batches) {
    for (const row of JSON.parse(batch) as ExportRow[]) {
      const [key, context, source, sourcePlural, forms, fuzzy, stale, previous, description, lengthLimit] = row;
      const translation = forms == null ? null : (JSON.parse(forms) as string[]);
      entries.push({
        key,
        context,
        source,
        sourcePlural,
        forms: translation,
        fuzzy: fuzzy === 1,
        stale: stale === 1,
        previous,
        description,
        lengthLimit,
      });
    }
  }
  const content = await FORMATS[format].write({ ...request, entries, meta: JSON.parse(meta) });
  // Transferred, not copied: a buffer of its own (a small one may share Node's allocation pool).
  const whole = content.byteOffset === 0 && content.byteLength === content.buffer.byteLength;
  const own = whole ? content : new Uint8Array(content);
  return Piscina.move(own) as unknown as Uint8Array;
}

/** The units of the batches posted after the meta, each batch after a turn of the event loop. */
async function* unitBatches(messages: MessageQueue<ReadMessage>): AsyncGenerator<CountedUnit[]> {
  for (;;) {
    const message = await messages.next();
    if ('end' in message) return;
    if ('problem' in message) throw new ReadError(message.problem);
    if (!('batch' in message)) throw new Error('the file thread posted something else than units');
    // Other requests are served between batches, even when the next one is already here.
    await new Promise((resolve) => setImmediate(resolve));
    const tuples = JSON.parse(message.batch) as UnitTuple[];
    yield tuples.map((tuple) => {
      const [key, context, source, sourcePlural, words, forms, untranslated, fuzzy, stale] = tuple;
      const [previous, description, lengthLimit] = tuple.slice(9) as (string | null)[];
      return {
        key,
        context,
        source,
        sourcePlural,
        words,
        forms,
        untranslated: untranslated ?? undefined,
        fuzzy,
        stale,
        previous,
        description,
        lengthLimit,
      };
    });
  }
}

/** Messages as they arrive, taken one at a time; a failure is thrown once those before it are taken. */
class MessageQueue<T> {
  private items: T[] = [];
  private failure: Error | null = null;
  private waiting: { resolve: (item: T) => void; reject: (error: Error) => void } | null = null;

  push(item: T): void {
    if (this.waiting) this.settle().resolve(item);
    else this.items.push(item);
  }

  fail(error: Error): void {
    if (this.waiting) this.settle().reject(error);
    else this.failure ??= error;
  }

  next(): Promise<T> {
    if (this.items.length) return Promise.resolve(this.items.shift()!);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  private settle() {
    const waiting = this.waiting!;
    this.waiting = null;
    return waiting;
  }
}

/** A problem with the uploaded file (its message is for the uploader). */
export class ReadError extends Error {}

/** Too many exports or screenshot uploads under way: the caller may try again shortly. */
export class PoolBusyError extends Error {}

// Exports and screenshot uploads under way (in a thread or waiting for one) per thread; more are
// refused, so waiting requests hold bounded memory, and the pool's queue always has room for the imports.
const EXPORTS_PER_THREAD = 4;

export interface PoolOptions {
  threads: number;
  /** Longest time one file may take; then its thread is stopped and the import fails. */
  timeoutMs: number;
}

/** The worker threads of one process; they start on the first import or export. */
export class FilePool {
  private pool: Piscina<Task, void | Uint8Array | ScreenshotsRead>;
  /** Exports and screenshot uploads under way. */
  private underWayCount = 0;

  constructor(private options: PoolOptions) {
    this.pool = new Piscina({
      filename: import.meta.url,
      execArgv: workerExecArgv(import.meta.url),
      minThreads: 0,
      maxThreads: options.threads,
      idleTimeout: 600_000,
      // The import queue hands over at most one file per thread (waiting files stay in the
      // table), and the exports under way are counted.
      maxQueue: options.threads * (1 + EXPORTS_PER_THREAD),
      // Below the main thread's priority (Linux): requests are served first on a busy machine.
      niceIncrement: 10,
    });
  }

  get threads(): number {
    return this.options.threads;
  }

  /**
   * Starts a thread if none runs, while an upload arrives: a thread's start-up (loading the
   * format readers) then overlaps the upload instead of delaying its import (bench/README.md).
   */
  warm(): void {
    if (this.pool.threads.length > 0) return;
    this.pool.run({ kind: 'warm' }).catch(() => {}); // a full queue means threads are running
  }

  /**
   * Reads one uploaded file: resolves once the thread has read it, with its units to come in
   * batches as the thread counts them; throws ReadError for a problem with the file.
   */
  async read(format: string, locale: string, payload: Uint8Array): Promise<ReadFile> {
    const { timeoutMs } = this.options;
    // The limit counts from the start of the work, not from a thread's start-up.
    const abort = new AbortController();
    const { port1, port2 } = new MessageChannel();
    const messages = new MessageQueue<ReadMessage>();
    let timer: NodeJS.Timeout | undefined;
    port1.on('message', (message: ReadMessage) => {
      if ('started' in message) timer = setTimeout(() => abort.abort(), timeoutMs);
      else messages.push(message);
      if ('end' in message || 'problem' in message) port1.close();
    });
    const task: ReadTask = { kind: 'read', format, locale, payload, port: port2 };
    this.pool
      .run(task, { signal: abort.signal, transferList: [port2] })
      .catch((error: Error) => {
        port1.close();
        if (abort.signal.aborted) {
          const limit = `${timeoutMs / 1000} s (QUOTES_IMPORT_TIMEOUT_S)`;
          messages.fail(new ReadError(`reading the file took longer than ${limit}; split it into smaller files`));
        } else if (error.message === 'Task queue is at limit') {
          messages.fail(new ReadError('the server is busy with other imports; upload the file again later'));
        } else {
          messages.fail(error);
        }
      })
      .finally(() => clearTimeout(timer));
    const first = await messages.next();
    if ('problem' in first) throw new ReadError(first.problem);
    if (!('meta' in first)) throw new Error('the file thread posted units before the meta');
    return { meta: first.meta, batches: unitBatches(messages) };
  }

  /**
   * Writes one file for export in a thread. `load` reads its strings once the export has its
   * place, so a refused export reads nothing; throws PoolBusyError when too many are under way.
   */
  async write(load: () => Promise<WriteJob>): Promise<Buffer> {
    return this.underWay('exports', async () => {
      const task: WriteTask = { kind: 'write', ...(await load()) };
      const content = (await this.pool.run(task)) as Uint8Array;
      return Buffer.from(content.buffer, content.byteOffset, content.byteLength);
    });
  }

  /** Reads a screenshot upload in a thread; throws PoolBusyError when too many requests are under way. */
  async readScreenshots(type: 'json' | 'form', body: Uint8Array, maxBytes: number): Promise<ScreenshotsRead> {
    return this.underWay('screenshot uploads', async () => {
      const task: ScreenshotsTask = { kind: 'screenshots', type, body, maxBytes };
      return (await this.pool.run(task)) as ScreenshotsRead;
    });
  }

  /** Counts the requests waiting on the pool (exports, screenshot uploads), refusing more than it may hold. */
  private async underWay<T>(what: string, work: () => Promise<T>): Promise<T> {
    if (this.underWayCount >= this.options.threads * EXPORTS_PER_THREAD) {
      throw new PoolBusyError(`the server is busy with other ${what}; try again in a few seconds`);
    }
    this.underWayCount++;
    try {
      return await work();
    } finally {
      this.underWayCount--;
    }
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}
