// INI: `key = value` lines in `[section]`s, read by the ini package (npm's own): sections with
// dots nest (`[app.menu]`), `key[] =` lines make a list, `;` and `#` start comments unless
// escaped or quoted, quoted values are JSON strings. Values true, false and null are not texts
// to ini (it reads them as such) and are skipped, as are `__proto__` keys, which ini drops.
import { parse, safe, unsafe } from 'ini';
import { MAX_DEPTH, buildTree, flattenTree } from './tree.js';
import { decodeText } from './text.js';
import { FormatError, type ExportRequest, type ParsedFile } from './types.js';

export function parseIni(bytes: Buffer): ParsedFile {
  const text = decodeText(bytes, { formatName: 'INI', allowUtf16: true });
  // ini nests a section once per dot; refused before it builds a very deep tree.
  const deep = new RegExp(String.raw`^[ \t]*\[(?:[^\].]*\.){${MAX_DEPTH}}`, 'm').exec(text);
  if (deep) {
    const line = text.slice(0, deep.index).split('\n').length;
    throw new FormatError(`INI section at line ${line} nests deeper than ${MAX_DEPTH} levels`);
  }
  return { units: flattenTree(parse(text), 'INI'), meta: {} };
}

/** A value as it is when ini reads it back so, else quoted (a JSON string, which ini reads back). */
function iniValue(text: string): string {
  return safe(text) === text && unsafe(text) === text ? text : JSON.stringify(text);
}

// What ini cannot read back as written is left out: a key with `=` (ini splits a line at its
// first `=`) or ending in `[]` (a list), a section name with `]` or `\`, or one that needs quoting.
const writableKey = (key: string) => !key.includes('=') && !key.endsWith('[]') && unsafe(safe(key)) === key;
const writableSection = (name: string) => !/[\]\\\r\n]/.test(name) && safe(name) === name && unsafe(name) === name;

export function writeIni(request: ExportRequest): Buffer {
  const lines: string[] = [];
  const write = (node: Record<string, unknown>, section: string[]) => {
    const own: string[] = [];
    const children: [string, Record<string, unknown>][] = [];
    for (const [key, value] of Object.entries(node)) {
      if (typeof value === 'string' || Array.isArray(value) ? !writableKey(key) : !writableSection(key)) continue;
      if (typeof value === 'string') own.push(`${safe(key)} = ${iniValue(value)}`);
      else if (Array.isArray(value)) {
        for (const item of value) if (typeof item === 'string') own.push(`${safe(key)}[] = ${iniValue(item)}`);
      } else if (value && typeof value === 'object') children.push([key, value as Record<string, unknown>]);
    }
    if (own.length) {
      if (section.length) lines.push(...(lines.length ? [''] : []), `[${section.join('.')}]`);
      lines.push(...own);
    }
    for (const [key, child] of children) write(child, [...section, key.replace(/\./g, '\\.')]);
  };
  write(buildTree(request), []);
  return Buffer.from(lines.join('\n') + '\n');
}
