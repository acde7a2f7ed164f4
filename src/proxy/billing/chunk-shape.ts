// The shape of a stream's content chunks, so that most of them are metered without parsing their
// JSON. An upstream sends the same chunk over and over with only the generated text changed:
//   data: {"id":"chatcmpl-1",…,"choices":[{"index":0,"delta":{"content":"<text>"},…}],"usage":null}
// Once one such chunk has been parsed, a ChunkShape keeps the bytes before and after its text.
// A later event made of the same bytes around a valid JSON string body is that chunk with other
// text: JSON.parse would give the same structure (the lexer reads the same prefix, the string, the
// same suffix), so no usage and, as delivered text, exactly the bytes the body stands for. Parsing
// every chunk was most of the meter's CPU per relayed event (bench/README.md, "Issue 18").

import { isUtf8 } from 'node:buffer';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** The one-character escapes of JSON (RFC 8259 §7), besides \u. */
const SHORT_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);
const U = 0x75;
/** Keys whose string value is delivered text (see deliveredBytes): where a chunk's text may sit. */
const TEXT_KEYS = ['content', 'reasoning', 'text', 'arguments', 'delta', 'partial_json', 'thinking'].map((key) =>
  Buffer.from(`"${key}":"`),
);

/** A chunk's data read as the meter reads it; null when it reports usage or is not a JSON object. */
export type ReadChunk = (data: string) => { contentBytes: number } | null;

export class ChunkShape {
  private constructor(
    private readonly prefix: Buffer,
    private readonly suffix: Buffer,
  ) {}

  /**
   * The shape of `event` (its bytes, `data: ` and the blank line included; `dataStart` where its
   * JSON starts), or null when it has none. The text's place is proven by reading the chunk with
   * the text replaced by "" and by "x" (`read`): they must deliver 0 and 1 byte and report no
   * usage. That "x" parses at all shows the prefix ends inside a string; 0 then 1 shows the
   * string is delivered text, counted once, and nothing else in the chunk is.
   */
  static of(event: Buffer, dataStart: number, dataEnd: number, read: ReadChunk): ChunkShape | null {
    for (const key of TEXT_KEYS) {
      const at = event.indexOf(key, dataStart);
      if (at < 0 || at >= dataEnd) continue;
      const start = at + key.length;
      const end = stringEnd(event, start, dataEnd);
      if (end < 0) continue;
      const before = event.toString('utf8', dataStart, start);
      const after = event.toString('utf8', end, dataEnd);
      if (read(`${before}${after}`)?.contentBytes !== 0 || read(`${before}x${after}`)?.contentBytes !== 1) continue;
      return new ChunkShape(Buffer.from(event.subarray(0, start)), Buffer.from(event.subarray(end)));
    }
    return null;
  }

  /** The delivered bytes of `event` when it has this shape; -1 when it does not (parse it). */
  contentBytesOf(event: Buffer): number {
    const { prefix, suffix } = this;
    const end = event.length - suffix.length;
    if (
      end < prefix.length ||
      event.compare(prefix, 0, prefix.length, 0, prefix.length) !== 0 ||
      event.compare(suffix, 0, suffix.length, end) !== 0
    ) {
      return -1;
    }
    return jsonStringBytes(event, prefix.length, end);
  }
}

/** Where the JSON string whose body starts at `start` ends (its closing quote), -1 if not before `limit`. */
function stringEnd(bytes: Buffer, start: number, limit: number): number {
  for (let i = start; i < limit; i++) {
    if (bytes[i] === BACKSLASH) i++;
    else if (bytes[i] === QUOTE) return i;
  }
  return -1;
}

/**
 * The UTF-8 bytes of the text a JSON string body (between its quotes) stands for, as JSON.parse
 * and Buffer.byteLength would count it; -1 when it is not a valid body (a bare quote or control
 * character, a bad escape, invalid UTF-8).
 */
export function jsonStringBytes(bytes: Buffer, start: number, end: number): number {
  let count = 0;
  let wide = false;
  for (let i = start; i < end; i++) {
    const byte = bytes[i];
    if (byte === QUOTE || byte < 0x20) return -1;
    if (byte !== BACKSLASH) {
      if (byte >= 0x80) wide = true;
      count++;
      continue;
    }
    const escape = i + 1 < end ? bytes[i + 1] : -1;
    if (SHORT_ESCAPES.has(escape)) {
      count++;
      i++;
      continue;
    }
    if (escape !== U) return -1;
    const unit = hex4(bytes, i + 2, end);
    if (unit < 0) return -1;
    i += 5;
    if (unit < 0x80) count += 1;
    else if (unit < 0x800) count += 2;
    else if (unit >= 0xd800 && unit < 0xdc00 && i + 2 < end && bytes[i + 1] === BACKSLASH && bytes[i + 2] === U) {
      // A high surrogate: with a low one after it, one 4-byte character.
      const low = hex4(bytes, i + 3, end);
      if (low >= 0xdc00 && low < 0xe000) {
        count += 4;
        i += 6;
      } else count += 3;
    } else count += 3; // the rest of the BMP; a lone surrogate is written as U+FFFD, 3 bytes too
  }
  if (wide && !isUtf8(bytes.subarray(start, end))) return -1;
  return count;
}

function hex4(bytes: Buffer, at: number, end: number): number {
  if (at + 4 > end) return -1;
  let value = 0;
  for (let i = at; i < at + 4; i++) {
    const byte = bytes[i];
    const digit =
      byte >= 0x30 && byte <= 0x39
        ? byte - 0x30
        : byte >= 0x61 && byte <= 0x66
          ? byte - 0x57
          : byte >= 0x41 && byte <= 0x46
            ? byte - 0x37
            : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}
