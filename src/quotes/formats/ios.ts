// IOS_STRINGS: Apple's "key" = "value"; lists, in UTF-8 or UTF-16 (with or without BOM).
// No maintained parser library exists for this tiny grammar; it is read by hand:
// comments /* … */ and // …, quoted or bare keys, escapes \" \\ \n \t \r \0 and \UXXXX.
import { decodeText } from './text.js';
import { FormatError, type ExportRequest, type ParsedFile, type ParsedUnit } from './types.js';

export function parseIosStrings(bytes: Buffer): ParsedFile {
  const text = decodeText(bytes, { allowUtf16: true, formatName: 'IOS_STRINGS' });
  const units: ParsedUnit[] = [];
  const seen = new Set<string>();
  let i = 0;
  const line = () => text.slice(0, i).split('\n').length;
  const skip = () => {
    for (;;) {
      while (i < text.length && /\s/.test(text[i])) i++;
      if (text.startsWith('/*', i)) {
        const end = text.indexOf('*/', i + 2);
        if (end < 0) throw new FormatError(`unterminated comment at line ${line()}`);
        i = end + 2;
      } else if (text.startsWith('//', i)) {
        const end = text.indexOf('\n', i);
        i = end < 0 ? text.length : end + 1;
      } else return;
    }
  };
  const token = (): string => {
    if (text[i] === '"') {
      i++;
      let out = '';
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\') {
          const c = text[i + 1];
          if (c === 'U' || c === 'u') {
            const hex = /^[0-9a-fA-F]{4}/.exec(text.slice(i + 2, i + 6));
            if (!hex) throw new FormatError(`bad \\U escape at line ${line()}`);
            out += String.fromCharCode(parseInt(hex[0], 16));
            i += 6;
            continue;
          }
          out += ({ n: '\n', t: '\t', r: '\r', '0': '\0' } as Record<string, string>)[c] ?? c;
          i += 2;
        } else out += text[i++];
      }
      if (i >= text.length) throw new FormatError(`unterminated string at line ${line()}`);
      i++;
      return out;
    }
    const bare = /^[A-Za-z0-9_.\-$:/]+/.exec(text.slice(i, i + 1024));
    if (!bare) throw new FormatError(`expected a quoted string at line ${line()}, found "${text.slice(i, i + 10)}"`);
    i += bare[0].length;
    return bare[0];
  };
  const expect = (char: string) => {
    skip();
    if (text[i] !== char) throw new FormatError(`expected "${char}" at line ${line()}`);
    i++;
  };
  skip();
  while (i < text.length) {
    const key = token();
    expect('=');
    skip();
    const value = token();
    expect(';');
    if (seen.has(key)) throw new FormatError(`duplicate key "${key.slice(0, 60)}" at line ${line()}`);
    seen.add(key);
    units.push({ key, context: null, source: value, sourcePlural: null, forms: [value], fuzzy: false, stale: false });
    skip();
  }
  return { units, meta: {} };
}

function quote(text: string): string {
  const escaped = text
    .replace(/\\/g, '\\\\')
    .replace(/"/g, '\\"')
    .replace(/\n/g, '\\n')
    .replace(/\t/g, '\\t')
    .replace(/\r/g, '\\r');
  return `"${escaped}"`;
}

export function writeIosStrings(request: ExportRequest): Buffer {
  const lines: string[] = [];
  for (const entry of request.entries) {
    const text = request.isBase ? entry.source : entry.forms?.[0];
    if (text) lines.push(`${quote(entry.key)} = ${quote(text)};`);
  }
  return Buffer.from(lines.join('\n') + '\n');
}
