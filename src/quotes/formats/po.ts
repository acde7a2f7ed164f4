// GNU gettext PO and POT files through gettext-parser.
// - the header entry (empty msgid) is not a phrase; obsolete `#~` entries are never read;
// - an entry is keyed by msgctxt + EOT + msgid (gettext's own convention for contexts);
// - `#, fuzzy` makes a translation "not approved";
// - `#| msgid "…"` (msgmerge --previous) names the source the translation was made for: when it
//   differs from the current msgid the translation is stale, i.e. "outdated".
import * as gettextParser from 'gettext-parser';
import type { GetTextTranslation, GetTextTranslations } from 'gettext-parser';
import { FormatError, type ExportRequest, type ParsedFile, type ParsedUnit } from './types.js';

const EOT = '\u0004';

export function poKey(context: string | null, msgid: string): string {
  return context ? `${context}${EOT}${msgid}` : msgid;
}

// gettext-parser builds one object keyed by msgid per context; with 100k entries that object
// becomes slow to grow. Parsing a UTF-8 file in slices of whole entries keeps each table small
// (several times faster); the slices are cut only at a blank line that ends a complete entry.
const SLICE_ENTRIES = 2000;

export function parsePo(bytes: Buffer, formatName: string): ParsedFile {
  if (bytes.includes(0)) throw new FormatError(`binary content (NUL bytes) is not a ${formatName} file (UTF-16 PO files are not supported)`);
  const slices = utf8Slices(bytes);
  const units: ParsedUnit[] = [];
  let headers: Record<string, string> = {};
  slices.forEach((input, index) => {
    let parsed: GetTextTranslations;
    try {
      parsed = gettextParser.po.parse(input, { defaultCharset: 'utf-8', validation: true });
    } catch (error) {
      throw new FormatError(`not a valid ${formatName} file: ${(error as Error).message.replace(/^Error parsing PO data: /, '')}`);
    }
    if (index === 0) headers = parsed.headers ?? {};
    for (const [context, entries] of Object.entries(parsed.translations)) {
      for (const entry of Object.values(entries)) {
        if (entry.msgid === '' && !context) continue; // the header
        units.push(toUnit(entry, context || null));
      }
    }
  });
  return { units, meta: { headers: pickHeaders(headers) } };
}

/** The file as slices of whole entries when it is UTF-8; else the bytes for gettext-parser's charset handling. */
function utf8Slices(bytes: Buffer): (Buffer | string)[] {
  const head = bytes.subarray(0, 4096).toString('latin1');
  const charset = /charset=([A-Za-z0-9_-]+)/i.exec(head)?.[1];
  if (charset && !/^(utf-?8|charset)$/i.test(charset)) return [bytes];
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new FormatError('the PO file declares UTF-8 (or no charset) but is not valid UTF-8');
  }
  const slices: string[] = [];
  let header = '';
  let start = 0;
  let entries = 0;
  let position = 0;
  // The keyword of the last line that is not a string continuation ("…") or blank.
  let keyword = '';
  while (position < text.length) {
    const end = text.indexOf('\n', position);
    const lineEnd = end < 0 ? text.length : end;
    const first = firstNonSpace(text, position, lineEnd);
    if (first === -1) {
      // A blank line after a msgstr (and its continuation lines) ends a complete entry.
      if (keyword.startsWith('msgstr') && ++entries === 1 && slices.length === 0) {
        // Every slice repeats the header entry, so that Plural-Forms validates each of them.
        const entry = text.slice(0, lineEnd);
        if (/^(\s*#[^\n]*\n)*\s*msgid\s+""\s*\n\s*msgstr/.test(entry)) header = entry;
      }
      if (keyword.startsWith('msgstr') && entries >= SLICE_ENTRIES) {
        slices.push((slices.length ? header + '\n' : '') + text.slice(start, lineEnd));
        start = lineEnd;
        entries = 0;
      }
      keyword = '';
    } else if (text[first] !== '"') {
      keyword = text.slice(first, first + 6);
    }
    position = lineEnd + 1;
  }
  if (slices.length === 0 || text.slice(start).trim() !== '') slices.push((slices.length ? header + '\n' : '') + text.slice(start));
  return slices;
}

function firstNonSpace(text: string, from: number, to: number): number {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== 13) return i;
  }
  return -1;
}

function toUnit(entry: GetTextTranslation, context: string | null): ParsedUnit {
  const flags = (entry.comments?.flag ?? '').split(',').map((flag) => flag.trim());
  const previous = entry.comments?.previous ? previousMsgid(entry.comments.previous) : null;
  return {
    key: poKey(context, entry.msgid),
    context,
    source: entry.msgid,
    sourcePlural: entry.msgid_plural ?? null,
    forms: entry.msgstr ?? [],
    fuzzy: flags.includes('fuzzy'),
    stale: previous !== null && previous !== entry.msgid,
  };
}

/** The msgid of a `#|` comment block (which may also carry msgctxt and msgid_plural). */
function previousMsgid(previous: string): string | null {
  let current: string | null = null;
  let msgid: string | null = null;
  for (const line of previous.split('\n')) {
    const keyword = /^\s*(msgctxt|msgid_plural|msgid)\s+(".*")\s*$/.exec(line);
    const continuation = /^\s*(".*")\s*$/.exec(line);
    if (keyword) {
      current = keyword[1];
      if (current === 'msgid') msgid = unquote(keyword[2]);
    } else if (continuation && current === 'msgid') {
      msgid = (msgid ?? '') + unquote(continuation[1]);
    }
  }
  return msgid;
}

function unquote(literal: string): string {
  const body = literal.slice(1, -1);
  return body.replace(/\\(["\\abfnrtv])/g, (_, c: string) => ({ a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' })[c] ?? c);
}

function pickHeaders(headers: Record<string, string>): Record<string, string> {
  const keep: Record<string, string> = {};
  for (const name of ['Project-Id-Version', 'Plural-Forms']) if (headers[name]) keep[name] = headers[name];
  return keep;
}

export function writePo(request: ExportRequest, template: boolean): Buffer {
  const saved = (request.meta.headers ?? {}) as Record<string, string>;
  const headers: Record<string, string> = {
    'Project-Id-Version': saved['Project-Id-Version'] ?? request.fileName,
    'Content-Type': 'text/plain; charset=UTF-8',
    'Content-Transfer-Encoding': '8bit',
    'MIME-Version': '1.0',
  };
  if (!template) headers.Language = request.locale.replace('-', '_');
  if (saved['Plural-Forms'] && (request.isBase || template)) headers['Plural-Forms'] = saved['Plural-Forms'];
  const translations: GetTextTranslations['translations'] = { '': { '': { msgid: '', msgstr: [''] } } };
  for (const entry of request.entries) {
    const context = entry.context ?? '';
    const forms = template ? null : request.isBase ? [entry.source, ...(entry.sourcePlural ? [entry.sourcePlural] : [])] : entry.forms;
    const blank = entry.sourcePlural ? ['', ''] : [''];
    translations[context] ??= {};
    translations[context][entry.source] = {
      ...(entry.context ? { msgctxt: entry.context } : {}),
      msgid: entry.source,
      ...(entry.sourcePlural ? { msgid_plural: entry.sourcePlural } : {}),
      msgstr: forms && forms.length ? forms : blank,
      ...(entry.fuzzy && !template && !request.isBase ? { comments: { flag: 'fuzzy' } as any } : {}),
    };
  }
  return gettextParser.po.compile({ charset: 'utf-8', headers, translations });
}
