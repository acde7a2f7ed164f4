// Log lines gathered as bytes: each line is encoded into a buffer the moment it is written, so no
// line's string outlives its request. Lines held as strings until the next write (up to 100 ms on
// standard output, 250 ms in the log store) could reach V8's old generation under load, and joining
// them flattened every line once more. With the info log on, a billed request cost 1.09× the CPU it
// cost without it, while the log's own frames were about 2%; what this saved could not be measured
// on that machine (bench/README.md, "Runs Q and R").

export class LineBuffer {
  private buffer: Buffer;
  private used = 0;

  constructor(private readonly capacity: number) {
    this.buffer = Buffer.allocUnsafe(capacity);
  }

  /** Bytes gathered and not yet taken. */
  get bytes(): number {
    return this.used;
  }

  /**
   * Appends the line's UTF-8 bytes. When they might not fit, what is gathered is handed to `full`
   * first; a line larger than the whole buffer is handed on as a chunk of its own.
   */
  add(line: string, full: (chunk: Buffer) => void): void {
    const most = line.length * 3; // UTF-8 bytes of a UTF-16 code unit, at most
    if (this.used > 0 && this.used + most > this.capacity) full(this.take());
    if (most > this.capacity) full(Buffer.from(line, 'utf8'));
    else this.used += this.buffer.write(line, this.used, 'utf8');
  }

  /**
   * The bytes gathered, as a chunk of their own (they are written later, in the background): a
   * copy when they are few (the buffer is filled again), else the buffer itself (a new one follows).
   */
  take(): Buffer {
    const full = this.used > this.capacity / 2;
    const chunk = full ? this.buffer.subarray(0, this.used) : Buffer.from(this.buffer.subarray(0, this.used));
    if (full) this.buffer = Buffer.allocUnsafe(this.capacity);
    this.used = 0;
    return chunk;
  }
}

/** The lines of a chunk (its newlines, and a last line without one). */
export function linesIn(chunk: Buffer): number {
  let lines = 0;
  for (let at = chunk.indexOf(0x0a); at !== -1; at = chunk.indexOf(0x0a, at + 1)) lines++;
  return chunk.length > 0 && chunk[chunk.length - 1] !== 0x0a ? lines + 1 : lines;
}
