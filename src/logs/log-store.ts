// The log kept where the operator can search it (docs/proxy-operator.md, "Logs"): the JSON lines the
// process writes to standard output (already redacted, src/http/logging.ts) are also appended, in
// the background, to files of a bounded, rotating store, one file per process, day and part
// (`app_YYYY-MM-DD.p<pid>.<part>.log`), so that several processes (WORKERS > 1) never share one.
// Writing never waits on the request's path: lines are gathered in memory and written by the
// thread pool; what cannot be written (a full disk, a buffer full behind a slow disk) is dropped and
// counted, never thrown. A search reads the newest files first, backwards, within a byte budget.
import { appendFileSync } from 'node:fs';
import { mkdir, open, readdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { LineBuffer, linesIn } from './line-buffer.js';

export interface LogStoreConfig {
  dir: string;
  /** A file that reaches this size is closed and the next part opened. */
  maxFileBytes: number;
  /** All files together, at most: the oldest are deleted beyond it. */
  maxTotalBytes: number;
  /** Files of older days are deleted. */
  keepDays: number;
}

/** Lines gathered before a write, and the longest a line waits. */
const WRITE_BYTES = 64 * 1024;
const WRITE_EVERY_MS = 250;
/** Lines held while the disk is slow, at most; beyond, lines are dropped (and counted). */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** After a failed write, lines are dropped for this long before the file is opened again. */
const RETRY_AFTER_MS = 5000;
const FILE_NAME = /^app_(\d{4}-\d{2}-\d{2})\.p(\d{1,10})\.(\d{1,6})\.log$/;
const DAY_MS = 86_400_000;

interface StoredFile {
  name: string;
  date: string;
  pid: number;
  part: number;
}

function filesOf(names: string[]): StoredFile[] {
  const files: StoredFile[] = [];
  for (const name of names) {
    const match = FILE_NAME.exec(name);
    if (match) files.push({ name, date: match[1], pid: Number(match[2]), part: Number(match[3]) });
  }
  return files;
}

const dateOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export class LogStore {
  /** Lines lost: not written (disk full, unwritable) or dropped while too many waited. */
  dropped = 0;
  /** Lines as bytes (line-buffer.ts): chunks ready to write, and the one being filled. */
  private chunks: Buffer[] = [];
  private chunkBytes = 0;
  private readonly pending = new LineBuffer(WRITE_BYTES);
  private readonly addChunk = (chunk: Buffer) => {
    this.chunks.push(chunk);
    this.chunkBytes += chunk.length;
  };
  private writing: Promise<void> | null = null;
  private handle: FileHandle | null = null;
  private date = '';
  private part = 0;
  private size = 0;
  private retryAt = 0;
  private closed = false;
  private readonly timer: NodeJS.Timeout;
  private readonly onExit = () => this.writeSyncAtExit();

  constructor(readonly config: LogStoreConfig) {
    this.timer = setInterval(() => this.kick(), WRITE_EVERY_MS);
    this.timer.unref();
    process.on('exit', this.onExit);
  }

  /** A log line (with its newline), as pino writes it. */
  write(line: string): void {
    if (this.closed) return;
    if (this.chunkBytes + this.pending.bytes + line.length > MAX_BUFFERED_BYTES) {
      this.dropped++;
      return;
    }
    this.pending.add(line, this.addChunk);
    if (this.chunks.length) this.kick();
  }

  /** Everything written so far reaches its file (or is counted as dropped). */
  async flush(): Promise<void> {
    while (this.writing || this.chunks.length || this.pending.bytes) {
      this.kick();
      await this.writing;
    }
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    clearInterval(this.timer);
    process.off('exit', this.onExit);
    await this.handle?.close().catch(() => {});
    this.handle = null;
  }

  /** Takes every line gathered: the chunks, then what is being filled. */
  private takeAll(): Buffer[] {
    if (this.pending.bytes) this.addChunk(this.pending.take());
    const chunks = this.chunks;
    this.chunks = [];
    this.chunkBytes = 0;
    return chunks;
  }

  private kick(): void {
    if (this.writing || (!this.chunks.length && !this.pending.bytes)) return;
    const chunks = this.takeAll();
    this.writing = this.append(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).finally(() => {
      this.writing = null;
      if (this.chunks.length) this.kick();
    });
  }

  /**
   * Appends the lines, as many whole lines as fit in each part (a line larger than a part has one
   * to itself).
   */
  private async append(bytes: Buffer): Promise<void> {
    let rest = bytes;
    try {
      while (rest.length) {
        if (Date.now() < this.retryAt) break;
        const firstLine = rest.indexOf(0x0a) + 1 || rest.length;
        // Opens the next part unless the first line fits this one (or this one is empty).
        const handle = await this.current(firstLine);
        const room = this.config.maxFileBytes - this.size;
        const cut = rest.length <= room ? rest.length : Math.max(firstLine, rest.lastIndexOf(0x0a, room - 1) + 1);
        await handle.write(rest.subarray(0, cut));
        this.size += cut;
        rest = rest.subarray(cut);
      }
    } catch {
      // ENOSPC, EACCES, a deleted directory: these lines are lost, the process goes on.
      this.retryAt = Date.now() + RETRY_AFTER_MS;
      await this.handle?.close().catch(() => {});
      this.handle = null;
    }
    this.dropped += linesIn(rest);
  }

  /** The file to append to: today's, a new part once the current one is full. */
  private async current(adding: number): Promise<FileHandle> {
    const date = dateOf(Date.now());
    if (this.handle && date === this.date && this.size + adding <= this.config.maxFileBytes) return this.handle;
    await this.handle?.close().catch(() => {});
    this.handle = null;
    if (date !== this.date) {
      this.date = date;
      this.part = 0;
    } else if (this.size > 0) {
      this.part++;
    }
    await mkdir(this.config.dir, { recursive: true });
    for (;;) {
      const handle = await open(join(this.config.dir, this.fileName()), 'a');
      this.size = (await handle.stat()).size;
      // A part left by an earlier process with this pid: the next one.
      if (this.size === 0 || this.size + adding <= this.config.maxFileBytes) {
        this.handle = handle;
        break;
      }
      await handle.close();
      this.part++;
    }
    await this.prune().catch(() => {});
    return this.handle;
  }

  private fileName(): string {
    return `app_${this.date}.p${process.pid}.${this.part}.log`;
  }

  /** Deletes the files of days beyond keepDays, then the oldest until all fit maxTotalBytes. */
  private async prune(): Promise<void> {
    const mine = this.fileName();
    const oldest = dateOf(Date.now() - (this.config.keepDays - 1) * DAY_MS);
    const files = filesOf(await readdir(this.config.dir)).filter((file) => file.name !== mine);
    const sized: (StoredFile & { bytes: number; mtime: number })[] = [];
    for (const file of files) {
      const path = join(this.config.dir, file.name);
      if (file.date < oldest) {
        await unlink(path).catch(() => {});
        continue;
      }
      const info = await stat(path).catch(() => null);
      if (info) sized.push({ ...file, bytes: info.size, mtime: info.mtimeMs });
    }
    let total = this.size + sized.reduce((sum, file) => sum + file.bytes, 0);
    sized.sort((a, b) => (a.date === b.date ? a.mtime - b.mtime : a.date < b.date ? -1 : 1));
    for (const file of sized) {
      if (total <= this.config.maxTotalBytes) break;
      await unlink(join(this.config.dir, file.name)).catch(() => {});
      total -= file.bytes;
    }
  }

  /** At exit, the lines still gathered are written at once (a crash loses them). */
  private writeSyncAtExit(): void {
    if ((!this.chunks.length && !this.pending.bytes) || !this.date) return;
    try {
      appendFileSync(join(this.config.dir, this.fileName()), Buffer.concat(this.takeAll()));
    } catch {
      // Nothing more to do at exit.
    }
  }

  // --- search ---------------------------------------------------------------------------------

  /** The days the store has lines of, newest first (at most `limit`). */
  async dates(limit: number): Promise<string[]> {
    const names = await readdir(this.config.dir).catch(() => [] as string[]);
    return [...new Set(filesOf(names).map((file) => file.date))].sort().reverse().slice(0, limit);
  }

  /**
   * The newest lines matching `filter` (at most `limit`), newest first, reading at most
   * `maxBytes` of files; `truncated` when that budget ran out before the search was complete.
   */
  async search(query: LogQuery): Promise<{ lines: ParsedLine[]; scannedBytes: number; truncated: boolean }> {
    await this.flush();
    const names = await readdir(this.config.dir).catch(() => [] as string[]);
    const fromDate = query.from === null ? null : dateOf(query.from);
    const toDate = query.to === null ? null : dateOf(query.to);
    const byDate = new Map<string, StoredFile[]>();
    for (const file of filesOf(names)) {
      if (query.date !== null && file.date !== query.date) continue;
      if ((fromDate !== null && file.date < fromDate) || (toDate !== null && file.date > toDate)) continue;
      byDate.set(file.date, [...(byDate.get(file.date) ?? []), file]);
    }
    const budget = { bytes: query.maxBytes };
    const found: ParsedLine[] = [];
    let truncated = false;
    for (const date of [...byDate.keys()].sort().reverse()) {
      const day: ParsedLine[] = [];
      for (const file of byDate.get(date)!) {
        let matches = 0;
        for await (const text of linesBackwards(join(this.config.dir, file.name), budget)) {
          const line = parseLine(text);
          if (!line) continue;
          if (query.from !== null && line.time < query.from) break; // a file's lines are in time order
          if (!matchesQuery(line, text, query)) continue;
          day.push(line);
          if (++matches >= query.limit) break;
        }
        if (budget.bytes <= 0) truncated = true;
      }
      day.sort((a, b) => b.time - a.time);
      found.push(...day);
      if (found.length >= query.limit || truncated) break;
    }
    return { lines: found.slice(0, query.limit), scannedBytes: query.maxBytes - budget.bytes, truncated };
  }
}

export interface LogQuery {
  /** A day, YYYY-MM-DD (UTC). */
  date: string | null;
  /** Unix ms. */
  from: number | null;
  to: number | null;
  /** pino's level number. */
  level: number | null;
  requestId: string | null;
  /** Case-insensitive text anywhere in the line. */
  search: string | null;
  statusCodes: number[] | null;
  methods: string[] | null;
  endpoints: string[] | null;
  limit: number;
  maxBytes: number;
}

/** A stored line, parsed: pino's fields. */
export interface ParsedLine {
  time: number;
  level: number;
  fields: Record<string, unknown>;
}

function parseLine(text: string): ParsedLine | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const fields = value as Record<string, unknown>;
  if (typeof fields.time !== 'number' || typeof fields.level !== 'number') return null;
  return { time: fields.time, level: fields.level, fields };
}

function matchesQuery(line: ParsedLine, text: string, query: LogQuery): boolean {
  const { fields } = line;
  if (query.to !== null && line.time > query.to) return false;
  if (query.level !== null && line.level !== query.level) return false;
  if (query.requestId !== null && fields.reqId !== query.requestId) return false;
  if (query.search !== null && !text.toLowerCase().includes(query.search.toLowerCase())) return false;
  const req = fields.req !== null && typeof fields.req === 'object' ? (fields.req as Record<string, unknown>) : null;
  if (query.statusCodes && !(typeof fields.status === 'number' && query.statusCodes.includes(fields.status))) {
    return false;
  }
  if (query.methods) {
    const method = typeof req?.method === 'string' ? req.method.toUpperCase() : '';
    if (!query.methods.some((m) => m.toUpperCase() === method)) return false;
  }
  if (query.endpoints) {
    const url = typeof req?.url === 'string' ? req.url : '';
    if (!query.endpoints.some((endpoint) => url.includes(endpoint.replace(/^\/+/, '')))) return false;
  }
  return true;
}

const CHUNK_BYTES = 256 * 1024;
/** A line longer than this is skipped when read back. */
const MAX_LINE_BYTES = 1024 * 1024;

/** A file's lines, last first, reading at most what `budget` has left (and taking it from it). */
async function* linesBackwards(path: string, budget: { bytes: number }): AsyncGenerator<string> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch {
    return; // deleted meanwhile (pruned by another process)
  }
  try {
    let position = (await handle.stat()).size;
    let carry = Buffer.alloc(0);
    while (position > 0 && budget.bytes > 0) {
      const size = Math.min(CHUNK_BYTES, position, budget.bytes);
      position -= size;
      budget.bytes -= size;
      const chunk = Buffer.alloc(size);
      await handle.read(chunk, 0, size, position);
      const data = carry.length ? Buffer.concat([chunk, carry]) : chunk;
      let end = data.length;
      for (let i = data.length - 1; i >= 0; i--) {
        if (data[i] !== 0x0a) continue;
        if (end > i + 1) yield data.toString('utf8', i + 1, end);
        end = i;
      }
      carry = end > MAX_LINE_BYTES ? Buffer.alloc(0) : data.subarray(0, end);
    }
    if (position === 0 && carry.length) yield carry.toString('utf8');
  } finally {
    await handle.close();
  }
}

/** A stream pino writes to that writes each line to `out` and keeps it in `store` too. */
export function keptDestination<T extends { write(line: string): unknown }>(out: T, store: LogStore) {
  return {
    write(line: string) {
      out.write(line);
      store.write(line);
    },
    flush(cb?: (error?: Error) => void) {
      const flushable = out as { flush?: (cb?: (error?: Error) => void) => void };
      if (typeof flushable.flush === 'function') flushable.flush(cb);
      else cb?.();
    },
  };
}
