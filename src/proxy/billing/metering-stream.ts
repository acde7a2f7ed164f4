// Reads an upstream SSE stream event by event: finds the usage (OpenAI's usage chunk, the
// responses API's `response.completed`, Anthropic's `message_delta` with the input of its
// `message_start`), counts the content delivered (for billing a stream that ends without usage),
// and notices the end (`data: [DONE]`, Anthropic's `message_stop`), after which nothing more may be sent.
// Events stay the bytes that came (passed on without re-encoding); only an event's data is
// decoded, to parse it, and a content chunk of the shape the stream repeats is not even parsed
// (chunk-shape.ts). Bytes, not text, are searched for boundaries: a UTF-8 character split
// across chunks waits whole in the tail, and no byte of a multi-byte character is CR or LF.
import { nestedDeeperThan } from '../../http/json-depth.js';
import { ChunkShape } from './chunk-shape.js';
import { field, fieldAt } from '../../json-fields.js';
import { readUsage, type BilledKind, type ReportedUsage } from './metering.js';

export interface SseEvent {
  /** The event's bytes as received, including its terminating blank line. */
  bytes: Buffer;
  /** The parsed JSON of its data, when it reports usage (and is not nested too deep to re-serialize). */
  json?: Record<string, unknown>;
  done: boolean;
  /** The usage it reports (see readUsage), null when it reports none. */
  usage: ReportedUsage | null;
}

const LF = 0x0a;
const CR = 0x0d;
/** Event boundaries of a stream that has CRs (searched in its latin1 text: one char a byte). */
const BOUNDARY = /\r\n\r\n|\n\n|\r\r/g;
const LINE = /\r\n|\n|\r/;
const DATA_PREFIX = Buffer.from('data: ');
/** Shapes looked for in one stream at most (each costs two parses): a stream whose chunks never repeat stops. */
const MAX_SHAPE_TRIES = 8;
/** A chunk longer than this is not kept as a shape (a stream holds its shape while it lasts). */
const MAX_SHAPE_BYTES = 16 * 1024;

export class SseMeter {
  /** The bytes of an event not complete yet (usually none: upstreams send whole events). */
  private tail: Buffer | null = null;
  /** UTF-8 bytes of the generated text seen so far. */
  contentBytes = 0;
  done = false;
  /** Anthropic: the input (and cached input) its message_start reported, for its message_delta's usage. */
  private anthropicStart: ReportedUsage | null = null;
  /** The last content chunk's shape (chunk-shape.ts), and how many times one was looked for. */
  private shape: ChunkShape | null = null;
  private shapeTries = 0;

  constructor(private readonly kind: BilledKind) {}

  /**
   * Meters `chunk` when it is one whole event of the stream's shape, the usual chunk of a long
   * answer (chunk-shape.ts): true, and there is nothing to do with it but pass it on; it reports
   * no usage and does not end the stream. Otherwise false: push() reads it.
   */
  takeUsual(chunk: Buffer): boolean {
    // A shape's bytes are one `data: ` line and its blank line, the body between them no LF or CR.
    return !this.tail && this.meteredByShape(chunk);
  }

  /** Counts the delivered bytes of an event of the stream's shape; false when it has none or another. */
  private meteredByShape(event: Buffer): boolean {
    const delivered = this.shape ? this.shape.contentBytesOf(event) : -1;
    if (delivered < 0) return false;
    this.contentBytes += delivered;
    return true;
  }

  /** The complete events in this chunk of bytes (an incomplete tail waits for the next chunk). */
  push(chunk: Buffer): SseEvent[] {
    const bytes = this.tail ? Buffer.concat([this.tail, chunk]) : chunk;
    this.tail = null;
    const events: SseEvent[] = [];
    const end = this.split(bytes, events);
    // Copied: the chunk's memory may be a view of a larger buffer the client reuses.
    if (end < bytes.length) this.tail = Buffer.from(bytes.subarray(end));
    return events;
  }

  /** The rest at the end of the stream (an unterminated last event counts too). */
  end(): SseEvent[] {
    const rest = this.tail;
    this.tail = null;
    return rest && rest.toString('latin1').trim() ? [this.parse(rest)] : [];
  }

  /** Parses the complete events of `bytes` into `events`; returns where the incomplete rest starts. */
  private split(bytes: Buffer, events: SseEvent[]): number {
    let start = 0;
    if (bytes.indexOf(CR) < 0) {
      // Line by line (one scan of the bytes): an event ends at an empty line; one of a single
      // line, the usual `data: …`, is known as such without scanning it again (dataOf).
      let lineStart = 0;
      let oneLine = true;
      for (let at = bytes.indexOf(LF); at >= 0 && at + 1 < bytes.length; at = bytes.indexOf(LF, lineStart)) {
        lineStart = at + 1;
        if (bytes[lineStart] !== LF) {
          oneLine = false;
          continue;
        }
        // A chunk that is one whole event (the usual one) is the event's bytes: no view of it made.
        const whole = start === 0 && at + 2 === bytes.length;
        events.push(this.parse(whole ? bytes : bytes.subarray(start, at + 2), oneLine));
        start = lineStart = at + 2;
        if (whole) break;
        oneLine = true;
      }
      return start;
    }
    const text = bytes.toString('latin1');
    BOUNDARY.lastIndex = 0;
    for (let match = BOUNDARY.exec(text); match; match = BOUNDARY.exec(text)) {
      const end = match.index + match[0].length;
      events.push(this.parse(bytes.subarray(start, end)));
      start = end;
    }
    return start;
  }

  /**
   * Anthropic reports usage twice: the input in message_start (not billed yet), the final output
   * count in message_delta, which is the event billed.
   */
  private anthropicUsage(json: Record<string, unknown>, event: SseEvent): ReportedUsage | null {
    const type = field(json, 'type');
    if (type === 'message_stop') {
      event.done = true;
      this.done = true;
    }
    if (type === 'message_start') {
      this.anthropicStart = readUsage(field(json, 'message'), 'messages');
      return null;
    }
    if (type !== 'message_delta') return null;
    const usage = readUsage(json, 'messages');
    if (!usage) return null;
    // A delta that repeats the input counts has the final ones; otherwise message_start's stand.
    if (usage.promptTokens !== null || !this.anthropicStart) return usage;
    const { promptTokens, cacheReadTokens, cacheWriteTokens } = this.anthropicStart;
    return { ...usage, promptTokens, cacheReadTokens, cacheWriteTokens };
  }

  /** `oneLine`: the bytes are known to be one line and its LF LF, without CR (split). */
  private parse(bytes: Buffer, oneLine = false): SseEvent {
    // A shape's bytes start with `data: ` and end with the blank line: one line is all it needs.
    if (oneLine && this.meteredByShape(bytes)) return { bytes, done: false, usage: null };
    const usual = isUsual(bytes, oneLine);
    const data = usual ? bytes.toString('utf8', DATA_PREFIX.length, bytes.length - 2) : dataOf(bytes);
    const event: SseEvent = { bytes, done: false, usage: null };
    if (data.trim() === '[DONE]') {
      event.done = true;
      this.done = true;
      return event;
    }
    // Not a JSON object (not JSON at all, say): passed on as it is.
    const object = data ? jsonObjectOf(data) : null;
    if (object) {
      event.usage = this.kind === 'messages' ? this.anthropicUsage(object, event) : readUsage(object, this.kind);
      // Kept to be re-written with the cost; too deep to re-serialize: billed from, passed on as it came.
      if (event.usage && !nestedDeeperThan(object)) event.json = object;
      const delivered = safeDeliveredBytes(object);
      this.contentBytes += delivered;
      if (
        usual &&
        delivered > 0 &&
        !event.usage &&
        this.kind !== 'messages' &&
        this.shapeTries < MAX_SHAPE_TRIES &&
        bytes.length <= MAX_SHAPE_BYTES
      ) {
        this.shapeTries++;
        this.shape = ChunkShape.of(bytes, DATA_PREFIX.length, bytes.length - 2, this.readContent) ?? this.shape;
      }
    }
    return event;
  }

  /** A chunk's data read as parse() reads it (for ChunkShape): null if it reports usage or is not an object. */
  private readonly readContent = (data: string) => {
    const object = jsonObjectOf(data);
    return object && !readUsage(object, this.kind) ? { contentBytes: safeDeliveredBytes(object) } : null;
  };
}

/** The JSON object `data` holds; null when it is not JSON or not an object. */
function jsonObjectOf(data: string): Record<string, unknown> | null {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    return null;
  }
  return json && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : null;
}

/** Whether the event is the usual one: a single `data: …` line and LF LF, no CR. */
function isUsual(bytes: Buffer, oneLine: boolean): boolean {
  const last = bytes.length - 2;
  return (
    bytes.length > DATA_PREFIX.length + 2 &&
    bytes.compare(DATA_PREFIX, 0, DATA_PREFIX.length, 0, DATA_PREFIX.length) === 0 &&
    (oneLine ||
      (bytes[last] === LF &&
        bytes[last + 1] === LF &&
        bytes.indexOf(LF, DATA_PREFIX.length) === last &&
        bytes.indexOf(CR) < 0))
  );
}

/** The data of an event: its `data:` lines' values joined by newlines. */
function dataOf(bytes: Buffer): string {
  return bytes
    .toString('utf8')
    .split(LINE)
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
    .join('\n');
}

/** UTF-8 bytes of a value that is text (generated text); other values count their String() form. */
function textBytes(value: unknown): number {
  return value === undefined || value === null ? 0 : Buffer.byteLength(String(value), 'utf8');
}

/** Anthropic's and the responses API's text fields of a `delta` object. */
const DELTA_TEXT_FIELDS = ['text', 'partial_json', 'thinking'];

/** deliveredBytes, 0 for a chunk whose text fields cannot be read. */
function safeDeliveredBytes(json: unknown): number {
  try {
    return deliveredBytes(json);
  } catch {
    return 0;
  }
}

/** Bytes of generated text in one chunk (chat deltas, completion text, responses API and Anthropic deltas). */
function deliveredBytes(json: unknown): number {
  let bytes = 0;
  const choices = field(json, 'choices');
  if (Array.isArray(choices)) {
    for (const choice of choices) {
      const delta = field(choice, 'delta');
      bytes +=
        textBytes(field(delta, 'content')) + textBytes(field(delta, 'reasoning')) + textBytes(field(choice, 'text'));
      // A value that is not iterable throws: the chunk counts nothing (safeDeliveredBytes).
      const calls = (field(delta, 'tool_calls') ?? []) as Iterable<unknown>;
      for (const call of calls) bytes += textBytes(fieldAt(call, ['function', 'arguments']));
    }
  }
  const delta = field(json, 'delta');
  if (typeof delta === 'string') bytes += textBytes(delta);
  for (const name of DELTA_TEXT_FIELDS) bytes += textBytes(field(delta, name));
  return bytes;
}

/** The event re-written with the node's fields added to its JSON data (for the usage chunk). */
export function withFields(event: SseEvent, fields: Record<string, unknown>): string {
  const json = { ...event.json, ...fields };
  const prefix = event.bytes
    .toString('utf8')
    .split(LINE)
    .filter((line) => line && !line.startsWith('data:'))
    .map((line) => `${line}\n`)
    .join('');
  return `${prefix}data: ${JSON.stringify(json)}\n\n`;
}
