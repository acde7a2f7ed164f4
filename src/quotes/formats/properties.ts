// JAVA_PROPERTIES: java.util.Properties files, read and written by dot-properties (escapes,
// continuation lines, `=`, `:` or blank separators, `#`/`!` comments). The encoding is Java's
// rule for resource bundles: UTF-8 when the bytes are valid UTF-8, else ISO-8859-1; `\uXXXX`
// escapes either way. A key given twice keeps its last value, as Properties.load does.
import { parseLines, stringify, type Pair } from 'dot-properties';
import { decodeText } from './text.js';
import { exportedText, FormatError, textUnit, type ExportRequest, type ParsedFile } from './types.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

function decodeProperties(bytes: Buffer): { text: string; encoding: 'utf-8' | 'ascii' } {
  // NUL bytes: binary or UTF-16, which decodeText names; Java reads neither.
  if (bytes.includes(0)) decodeText(bytes, { formatName: 'JAVA_PROPERTIES' });
  const body = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
  const ascii = !body.some((byte) => byte > 0x7f);
  try {
    return { text: utf8.decode(body), encoding: ascii ? 'ascii' : 'utf-8' };
  } catch {
    return { text: body.toString('latin1'), encoding: 'ascii' };
  }
}

export function parseProperties(bytes: Buffer): ParsedFile {
  const { text, encoding } = decodeProperties(bytes);
  const values = new Map<string, string>();
  for (const node of parseLines(text, true)) {
    if (node.type !== 'PAIR') continue;
    const pair = node as Required<Pair>;
    // Properties.load refuses a \u without four hex digits; dot-properties would read it as "u".
    const raw = text.slice(pair.range[0], pair.range[pair.range.length - 1]);
    if (/(?:^|[^\\])(?:\\\\)*\\u(?![0-9a-fA-F]{4})/.test(raw)) {
      throw new FormatError(`malformed \\uXXXX escape at line ${text.slice(0, pair.range[0]).split('\n').length}`);
    }
    values.set(pair.key, pair.value);
  }
  return { units: [...values].map(([key, value]) => textUnit(key, value)), meta: { encoding } };
}

/**
 * The file as its upload was written: UTF-8 stays UTF-8; otherwise every character beyond
 * ASCII is a \uXXXX escape, which every Java version reads whatever encoding it assumes.
 */
export function writeProperties(request: ExportRequest): Buffer {
  const pairs: [string, string][] = [];
  for (const entry of request.entries) {
    const text = exportedText(request, entry);
    if (text !== null) pairs.push([entry.key, text]);
  }
  const raw = request.meta.encoding === 'utf-8';
  const text = stringify(pairs, { latin1: !raw, lineWidth: null });
  const ascii = raw
    ? text
    : text.replace(/[\u0080-\u00ff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return Buffer.from(ascii + '\n');
}
