// Reading a JSON description while it downloads. A structural scan (strings, brackets, the root's
// members and the path items of `paths`) finds where each value starts and ends; JSON.parse then
// reads each value from its own slice, so the native parser does the work and the first path
// items can be shown long before the last byte arrives (bench/README.md has the figures). What
// follows `paths` is not scanned at all: it is decoded as it arrives and parsed in one piece at the end.
// Anything the scan does not expect (YAML, a root that is not an object, malformed JSON) makes
// the caller parse the whole text at the end instead, which also keeps the old error messages.

/** A reference to another document ("$ref": "other.json#/…"): worth walking the description for. */
export const EXTERNAL_REF = /\$ref['"]?\s*:\s*['"]?(?!#)[^\s'"]/;

// Root members other than these wait for the end when larger than DEFER_BYTES: `components` or
// `definitions` can be most of a description, and the first render needs none of it.
export const FOR_FIRST_RENDER = new Set([
  'openapi',
  'swagger',
  'info',
  'tags',
  'servers',
  'host',
  'basePath',
  'schemes',
  'consumes',
  'produces',
  'security',
  'externalDocs',
]);
export const DEFER_BYTES = 64 * 1024;

// Scanner states: where in the structure the next byte belongs.
const BEFORE_ROOT = 0;
const FIRST_KEY = 1; // after `{`: a key or `}`
const KEY = 2; // after `,`: a key
const KEY_STRING = 3;
const COLON = 4;
const VALUE_START = 5;
const VALUE = 6;
const AFTER_VALUE = 7; // `,` or `}`
const AFTER_ROOT = 8;
const AFTER_PATHS = 9; // `,` (then the rest, unscanned) or `}`
const REST = 10;

// Value kinds while a value is being scanned.
const CONTAINER = 0;
const STRING = 1;
const PRIMITIVE = 2;

class NotStreamable extends Error {}

/** Bytes that matter inside a value: 1 a quote, 2 an opening and 3 a closing bracket; 0 the rest. */
const STRUCTURE = new Uint8Array(256);
STRUCTURE[0x22] = 1;
STRUCTURE[0x7b] = STRUCTURE[0x5b] = 2;
STRUCTURE[0x7d] = STRUCTURE[0x5d] = 3;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Index of the quote that ends a string whose content goes on at `from`, or -1 if not yet received. */
function closingQuote(bytes: Uint8Array, from: number): number {
  for (let q = bytes.indexOf(0x22, from); q !== -1; q = bytes.indexOf(0x22, q + 1)) {
    let k = q - 1;
    while (bytes[k] === 0x5c) k--;
    if ((q - 1 - k) % 2 === 0) return q; // an even number of backslashes: not escaped
  }
  return -1;
}

/** Like JSON.parse does: an own, enumerable property, whatever the key (`__proto__` included). */
export function define(target: object, key: string, value: unknown) {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/** What the streaming readers (JSON here, YAML in stream-yaml.ts) tell load.ts about `paths`. */
export abstract class PathsProgress {
  /** Path items read since `progressed()` last looked. */
  protected added = 0;
  private pathsDoneSeen = false;
  pathsDone = false;

  /** Whether path items were added, or `paths` ended, since the last call. */
  progressed(): boolean {
    const progressed = this.added > 0 || this.pathsDone !== this.pathsDoneSeen;
    this.added = 0;
    this.pathsDoneSeen = this.pathsDone;
    return progressed;
  }
}

export class StreamingJson extends PathsProgress {
  private buffer: Uint8Array;
  private length = 0;
  private pos = 0;
  private state = BEFORE_ROOT;
  /** 1: the root object's members; 2: the path items inside `paths`. */
  private level = 1;
  private key = '';
  private keyStart = 0;
  private valueStart = 0;
  private kind = CONTAINER;
  private depth = 0;
  private inString = false;
  private readonly decoder = new TextDecoder();
  private paths?: Record<string, unknown>;
  private deferred: { key: string; start: number; end: number; seq: number }[] = [];
  /** The last occurrence of each root key: a later duplicate wins, as with JSON.parse. */
  private latest = new Map<string, number>();
  private seq = 0;
  /** Where the members after `paths` begin (after its `,`). */
  private restStart = -1;
  /** Their text, decoded as it arrives (while the rest downloads rather than all at the end). */
  private restText: string[] = [];
  private readonly restDecoder = new TextDecoder();
  /** The scan gave up: the caller parses `bytes()` as a whole. */
  whole: boolean;
  /** The description as far as it has arrived: root members parsed so far, `paths` growing. */
  readonly root: Record<string, unknown> = {};
  externalRefs = false;

  /**
   * `streamable` false (another charset): only collect the bytes. `expected`: Content-Length, if
   * any; the server's word, so at most 32 MB is set aside before the bytes are there.
   */
  constructor(streamable = true, expected = 0) {
    super();
    this.whole = !streamable;
    this.buffer = new Uint8Array(Math.min(Math.max(expected, 64 * 1024), 32 * 1024 * 1024));
  }

  push(chunk: Uint8Array) {
    if (this.length + chunk.length > this.buffer.length) {
      const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.length + chunk.length));
      grown.set(this.buffer.subarray(0, this.length));
      this.buffer = grown;
    }
    this.buffer.set(chunk, this.length);
    this.length += chunk.length;
    this.run(false);
  }

  /** Still reading the structure (not yet past `paths`, not given up): each byte pushed is scanned. */
  scanning(): boolean {
    return !this.whole && this.state !== REST && this.state !== AFTER_ROOT;
  }

  bytes(): Uint8Array {
    return this.buffer.subarray(0, this.length);
  }

  /** The whole description, or undefined when it has to be parsed as one text. */
  finish(): Record<string, unknown> | undefined {
    this.run(true);
    if (this.whole || (this.state !== AFTER_ROOT && this.state !== REST)) return undefined;
    try {
      for (const member of this.deferred) {
        const value = this.parse(member.start, member.end);
        if (this.latest.get(member.key) === member.seq) define(this.root, member.key, value);
      }
      // `, "k": v, … }` after `paths` is read as `{"k": v, … }`: valid exactly when the original is.
      // Its members come last, so they win over earlier duplicates, as with JSON.parse.
      if (this.state === REST) {
        const rest = this.parseText(`{${this.restText.join('')}${this.restDecoder.decode()}`) as Record<
          string,
          unknown
        >;
        this.restText = [];
        for (const key of Object.keys(rest)) define(this.root, key, rest[key]);
      }
    } catch {
      return undefined;
    }
    this.deferred = [];
    return this.root;
  }

  private run(final: boolean) {
    if (this.whole) return;
    try {
      this.scan(final);
    } catch {
      // Malformed or not JSON: parsed as one text at the end, which reports it as before.
      this.whole = true;
    }
  }

  private scan(final: boolean) {
    const bytes = this.buffer.subarray(0, this.length);
    const end = this.length;
    let i = this.pos;
    while (i < end) {
      const c = bytes[i];
      switch (this.state) {
        case BEFORE_ROOT:
          // What trimStart() dropped before: a byte order mark and ASCII white space.
          if (i === 0 && c === 0xef) {
            if (end < 3 && !final) return;
            if (bytes[1] !== 0xbb || bytes[2] !== 0xbf) throw new NotStreamable();
            i = 3;
          } else if (isSpace(c) || c === 0x0b || c === 0x0c) i++;
          else if (c === 0x7b) {
            i++;
            this.state = FIRST_KEY;
          } else throw new NotStreamable(); // YAML, an array, text
          break;
        case FIRST_KEY:
        case KEY:
          if (isSpace(c)) i++;
          else if (c === 0x22 && this.restStart !== -1) {
            this.state = REST;
            i = this.restStart; // the white space before the key is part of the text
          } else if (c === 0x22) {
            this.keyStart = i++;
            this.state = KEY_STRING;
          } else if (c === 0x7d && this.state === FIRST_KEY) i = this.close(i);
          else throw new NotStreamable();
          break;
        case KEY_STRING: {
          const q = closingQuote(bytes, i);
          if (q === -1) {
            i = end;
            break;
          }
          this.key = JSON.parse(this.decoder.decode(bytes.subarray(this.keyStart, q + 1)));
          if (this.key === '$ref') this.externalRefs = true;
          i = q + 1;
          this.state = COLON;
          break;
        }
        case COLON:
          if (isSpace(c)) i++;
          else if (c === 0x3a) {
            i++;
            this.state = VALUE_START;
          } else throw new NotStreamable();
          break;
        case VALUE_START:
          if (isSpace(c)) {
            i++;
          } else if (this.level === 1 && this.key === 'paths' && c === 0x7b) {
            // `paths` is read item by item; a later duplicate replaces it, as with JSON.parse.
            this.paths = {};
            define(this.root, 'paths', this.paths);
            this.latest.set('paths', ++this.seq);
            this.level = 2;
            this.state = FIRST_KEY;
            i++;
          } else {
            this.valueStart = i;
            this.kind = c === 0x7b || c === 0x5b ? CONTAINER : c === 0x22 ? STRING : PRIMITIVE;
            this.depth = 0;
            this.inString = false;
            this.state = VALUE;
          }
          break;
        case VALUE: {
          const stop = this.scanValue(bytes, i, final);
          if (stop === -1) return;
          this.member(this.valueStart, stop);
          i = stop;
          this.state = AFTER_VALUE;
          break;
        }
        case AFTER_VALUE:
          if (isSpace(c)) i++;
          else if (c === 0x2c) {
            i++;
            this.state = KEY;
          } else if (c === 0x7d) i = this.close(i);
          else throw new NotStreamable();
          break;
        case AFTER_ROOT:
          if (!isSpace(c)) throw new NotStreamable();
          i++;
          break;
        case AFTER_PATHS:
          if (isSpace(c)) i++;
          else if (c === 0x7d) {
            i++;
            this.state = AFTER_ROOT;
          } else if (c === 0x2c) {
            this.restStart = ++i;
            this.state = KEY; // only to check that a key follows, then REST (from restStart on)
          } else throw new NotStreamable();
          break;
        case REST:
          this.restText.push(this.restDecoder.decode(bytes.subarray(i, end), { stream: true }));
          i = end;
          break;
      }
      this.pos = i;
    }
    this.pos = i;
  }

  /** `}` at `i`: the end of `paths` or of the root. */
  private close(i: number): number {
    if (this.level === 2) {
      this.level = 1;
      this.pathsDone = true;
      this.state = AFTER_PATHS;
    } else this.state = AFTER_ROOT;
    return i + 1;
  }

  /** Where the value being scanned ends (exclusive), or -1 when more bytes are needed. */
  private scanValue(bytes: Uint8Array, from: number, final: boolean): number {
    const end = this.length;
    let i = from;
    if (this.kind === STRING) {
      const q = closingQuote(bytes, i === this.valueStart ? i + 1 : i);
      if (q === -1) {
        this.pos = end;
        return -1;
      }
      return q + 1;
    }
    if (this.kind === PRIMITIVE) {
      while (i < end && !isSpace(bytes[i]) && bytes[i] !== 0x2c && bytes[i] !== 0x7d && bytes[i] !== 0x5d) i++;
      if (i === end && !final) {
        this.pos = end;
        return -1;
      }
      return i;
    }
    let depth = this.depth;
    let inString = this.inString;
    while (i < end) {
      if (inString) {
        // Most strings are short names: a plain loop finds their end sooner than a call to indexOf.
        let j = i;
        while (j < end && j - i < 32 && bytes[j] !== 0x22 && bytes[j] !== 0x5c) j++;
        // (A quote found at once may still be escaped by a backslash the previous chunk ended with.)
        const plain = j < end && bytes[j] === 0x22 && (j > i || bytes[i - 1] !== 0x5c);
        const q = plain ? j : closingQuote(bytes, j);
        if (q === -1) {
          i = end;
          break;
        }
        i = q + 1;
        inString = false;
        continue;
      }
      const kind = STRUCTURE[bytes[i++]];
      if (kind === 0) continue;
      if (kind === 1) inString = true;
      else if (kind === 2) depth++;
      else if (--depth === 0) return i;
    }
    this.depth = depth;
    this.inString = inString;
    this.pos = end;
    return -1;
  }

  /** A complete value of the root or of `paths`: parsed now, or (large, not needed yet) at the end. */
  private member(start: number, end: number) {
    const key = this.key;
    if (this.level === 2) {
      define(this.paths!, key, this.parse(start, end));
      this.added++;
      return;
    }
    const seq = ++this.seq;
    this.latest.set(key, seq);
    if (end - start > DEFER_BYTES && !FOR_FIRST_RENDER.has(key)) {
      define(this.root, key, undefined); // holds the key's place in the order JSON.parse would give
      this.deferred.push({ key, start, end, seq });
    } else define(this.root, key, this.parse(start, end));
  }

  private parse(start: number, end: number): unknown {
    return this.parseText(this.decoder.decode(this.buffer.subarray(start, end)));
  }

  private parseText(text: string): unknown {
    if (!this.externalRefs && EXTERNAL_REF.test(text)) this.externalRefs = true;
    return JSON.parse(text);
  }
}
