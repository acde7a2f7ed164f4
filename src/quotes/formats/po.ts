// GNU gettext PO and POT files through gettext-parser.
// - the header entry (empty msgid) is not a phrase; obsolete `#~` entries are never read;
// - an entry is keyed by msgctxt + EOT + msgid (gettext's own convention for contexts);
// - `#, fuzzy` makes a translation "not approved";
// - `#| msgid "…"` (msgmerge --previous) names the source the translation was made for: when it
//   differs from the current msgid the translation is stale, i.e. "outdated".
import * as gettextParser from 'gettext-parser';
import type { GetTextTranslations } from 'gettext-parser';
import { readPlainEntries, type PlainContext, type PoEntry } from './po-plain.js';
import { FormatError, type ExportRequest, type ParsedFile, type ParsedUnit } from './types.js';

const EOT = '\u0004';

export function poKey(context: string | null, msgid: string): string {
  return context ? `${context}${EOT}${msgid}` : msgid;
}

// gettext-parser builds one object keyed by msgid per context; with 100k entries that object
// becomes slow to grow. Parsing a UTF-8 file in slices of whole entries keeps each table small
// (about twice as fast in CPU time; 250 entries per slice measured best); the slices are cut
// only at a blank line that ends a complete entry, and each slice repeats the header entry so
// that Plural-Forms validates all of them. A slice in the plain layout is read by
// readPlainEntries (po-plain.ts) instead, with the same result, several times faster.
// Templates (xgettext) say `nplurals=INTEGER`; for validation only, such a header gets the
// number of plural forms the file actually uses.
const SLICE_ENTRIES = 250;
const PAUSE_MS = 10;
// gettext-parser's duplicate check is `msgid in table`: it takes these names for duplicates.
const PROTOTYPE_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype));

/** `plainReader: false` parses every slice with gettext-parser (the tests compare both ways). */
export function parsePo(bytes: Buffer, formatName: string, options: { plainReader?: boolean } = {}): ParsedFile {
  return parsePoSlices(bytes, formatName, () => undefined, options.plainReader ?? true) as ParsedFile;
}

/** parsePo that lets the event loop run between slices. */
export function parsePoAsync(bytes: Buffer, formatName: string): Promise<ParsedFile> {
  return parsePoSlices(
    bytes,
    formatName,
    () => new Promise<void>((resolve) => setImmediate(resolve)),
    true,
  ) as Promise<ParsedFile>;
}

function parsePoSlices(
  bytes: Buffer,
  formatName: string,
  pause: () => Promise<void> | undefined,
  plainReader: boolean,
): ParsedFile | Promise<ParsedFile> {
  if (bytes.includes(0)) {
    throw new FormatError(`binary content (NUL bytes) is not a ${formatName} file (UTF-16 PO files are not supported)`);
  }
  const split = utf8Slices(bytes);
  /** `fileLine` maps a line of `input` to the file's (a slice is parsed after the header). */
  const parse = (
    input: Buffer | string,
    validation: boolean,
    fileLine = (line: number) => line,
  ): GetTextTranslations => {
    try {
      return gettextParser.po.parse(input, { defaultCharset: 'utf-8', validation });
    } catch (error) {
      const message = (error as Error).message
        .replace(/^Error parsing PO data: /, '')
        .replace(/ at line (\d+)/, (_, line: string) => ` at line ${fileLine(Number(line))}`);
      const builtIn = /^Duplicate msgid error: entry "(.*)" in ".*" context/s.exec(message)?.[1];
      if (builtIn !== undefined && PROTOTYPE_NAMES.has(builtIn)) {
        throw new FormatError(refusedBuiltIn(formatName, builtIn));
      }
      throw new FormatError(`not a valid ${formatName} file: ${message}`);
    }
  };
  const units: ParsedUnit[] = [];
  const collect = (entries: PoEntry[]) => {
    for (const entry of entries) units.push(toUnit(entry));
  };
  if (!split) {
    // A legacy charset: one parse of the bytes, gettext-parser converts from the declared charset.
    const head = bytes.subarray(0, 8192).toString('latin1');
    const parsed = parse(bytes, /nplurals\s*=\s*\d/.test(head));
    collect(tableEntries(parsed));
    return { units, meta: { headers: pickHeaders(parsed.headers ?? {}) } };
  }
  const { header, bodies, firstLines } = split;
  const headers = header ? (parse(header, false).headers ?? {}) : {};
  const validationHeader = withPluralCount(header, bodies);
  const plain = plainReader ? plainContext(validationHeader) : null;
  const headerLines = validationHeader.split('\n').length;
  const result = () => ({ units, meta: { headers: pickHeaders(headers) } });
  // Synchronous when `pause` returns nothing; otherwise other work runs every PAUSE_MS.
  let last = performance.now();
  const run = (index: number): ParsedFile | Promise<ParsedFile> => {
    for (let i = index; i < bodies.length; i++) {
      const input = validationHeader + '\n' + bodies[i];
      collect(
        (plain && readPlainEntries(bodies[i], plain)) ??
          tableEntries(parse(input, true, (line) => line - headerLines + firstLines[i] - 1)),
      );
      if (i + 1 === bodies.length || performance.now() - last < PAUSE_MS) continue;
      const waiting = pause();
      if (waiting) {
        return waiting.then(() => {
          last = performance.now();
          return run(i + 1);
        });
      }
    }
    return result();
  };
  return run(0);
}

/** The plain reader takes such msgids; gettext-parser refuses them, whether declared twice or not. */
function refusedBuiltIn(formatName: string, msgid: string): string {
  return (
    `not a valid ${formatName} file: msgid "${msgid}" is declared twice, or is in a part of the file ` +
    'that gettext-parser reads (obsolete #~ entries, a legacy charset, an unusual layout), which takes ' +
    "names of JavaScript's Object.prototype for duplicates"
  );
}

/** The entries of gettext-parser's table, in its order, without the header. */
function tableEntries(parsed: GetTextTranslations): PoEntry[] {
  const entries: PoEntry[] = [];
  for (const [context, table] of Object.entries(parsed.translations)) {
    for (const entry of Object.values(table)) if (entry.msgid !== '' || context) entries.push(entry);
  }
  return entries;
}

/** What the plain reader needs from the (validation) header, or null when gettext-parser refuses it. */
function plainContext(validationHeader: string): PlainContext | null {
  if (!validationHeader) return { nplurals: 1, headerFirst: false };
  try {
    const parsed = gettextParser.po.parse(validationHeader, { defaultCharset: 'utf-8', validation: true });
    // Only the header entry: anything else would take part in the slices' duplicate checks.
    const contexts = Object.keys(parsed.translations);
    const msgids = Object.keys(parsed.translations[''] ?? {});
    if (contexts.join() !== '' || msgids.length !== 1 || msgids[0] !== '') return null;
    // As gettext-parser reads nplurals from the header (1 when it has none).
    const nplurals =
      Number.parseInt(/nplurals\s*=\s*(\d+)/.exec(parsed.headers?.['Plural-Forms'] ?? '')?.[1] ?? '', 10) || 1;
    return { nplurals, headerFirst: true };
  } catch {
    return null;
  }
}

/** The header entry, made to declare a number of plural forms when it does not. */
function withPluralCount(header: string, bodies: string[]): string {
  if (/nplurals\s*=\s*\d/.test(header)) return header;
  let forms = 0;
  for (const body of bodies) {
    for (const match of body.matchAll(/^[ \t]*msgstr\[(\d+)\]/gm)) forms = Math.max(forms, Number(match[1]) + 1);
  }
  if (forms === 0) return header;
  const line = `"Plural-Forms: nplurals=${forms}; plural=0;\\n"`;
  if (!header) return `msgid ""\nmsgstr ""\n${line}\n`;
  if (/"Plural-Forms:[^"\n]*"/.test(header)) return header.replace(/"Plural-Forms:[^"\n]*"/, line);
  return header.replace(/(msgstr[ \t]+"[^"\n]*")/, `$1\n${line}`);
}

/**
 * A UTF-8 file as its header entry and slices of whole entries, with the file's line number of
 * each slice's first line (for error messages); null for a legacy charset.
 */
function utf8Slices(bytes: Buffer): { header: string; bodies: string[]; firstLines: number[] } | null {
  const head = bytes.subarray(0, 8192).toString('latin1');
  const charset = /charset=([A-Za-z0-9_-]+)/i.exec(head)?.[1];
  if (charset && !/^(utf-?8|charset)$/i.test(charset)) return null;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new FormatError('the PO file declares UTF-8 (or no charset) but is not valid UTF-8');
  }
  const bodies: string[] = [];
  const firstLines: number[] = [];
  let header = '';
  let start = 0;
  // A slice starts with the line break of the blank line before it: on that blank line.
  let line = 1;
  let startLine = 1;
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
      if (keyword.startsWith('msgstr')) {
        entries++;
        if (start === 0 && bodies.length === 0 && !header) {
          const entry = text.slice(0, lineEnd);
          if (/^(\s*#[^\n]*\n)*\s*msgid\s+""\s*\n\s*msgstr/.test(entry)) {
            header = entry;
            start = lineEnd;
            startLine = line;
            entries = 0;
          }
        }
        if (entries >= SLICE_ENTRIES) {
          bodies.push(text.slice(start, lineEnd));
          firstLines.push(startLine);
          start = lineEnd;
          startLine = line;
          entries = 0;
        }
      }
      keyword = '';
    } else if (text[first] !== '"') {
      keyword = text.slice(first, first + 6);
    }
    position = lineEnd + 1;
    line++;
  }
  if (!header && bodies.length === 0 && /^(\s*#[^\n]*\n)*\s*msgid\s+""\s*\n\s*msgstr/.test(text.slice(start))) {
    // A file that is only a header entry (no blank line after it).
    header = text.slice(start);
    start = text.length;
  }
  const rest = text.slice(start);
  if (rest.trim() !== '' || bodies.length === 0) {
    bodies.push(rest);
    firstLines.push(startLine);
  }
  return { header, bodies, firstLines };
}

function firstNonSpace(text: string, from: number, to: number): number {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== 13) return i;
  }
  return -1;
}

function toUnit(entry: PoEntry): ParsedUnit {
  // gettext-parser files an entry under its msgctxt, and under '' when it is empty.
  const context = entry.msgctxt || null;
  const flags = entry.comments?.flag;
  const previous = entry.comments?.previous ? previousMsgid(entry.comments.previous) : null;
  return {
    key: poKey(context, entry.msgid),
    context,
    source: entry.msgid,
    sourcePlural: entry.msgid_plural ?? null,
    forms: entry.msgstr ?? [],
    fuzzy: !!flags && flags.split(/[,\n]/).some((flag) => flag.trim() === 'fuzzy'),
    stale: previous !== null && previous !== entry.msgid,
    previous: entry.comments?.previous ?? null,
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
  return body.replace(
    /\\(["\\abfnrtv])/g,
    (_, c: string) => ({ a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' })[c] ?? c,
  );
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
  const pluralForms = request.isBase || template ? saved['Plural-Forms'] : request.pluralForms;
  if (pluralForms) headers['Plural-Forms'] = pluralForms;
  // Contexts and msgids are the file's text: tables without a prototype take `__proto__` as any key.
  const table = (): GetTextTranslations['translations'][string] => Object.create(null);
  const translations: GetTextTranslations['translations'] = Object.create(null);
  translations[''] = table();
  translations[''][''] = { msgid: '', msgstr: [''] };
  for (const entry of request.entries) {
    const context = entry.context ?? '';
    const forms = template
      ? null
      : request.isBase
        ? [entry.source, ...(entry.sourcePlural ? [entry.sourcePlural] : [])]
        : entry.forms;
    const blank = entry.sourcePlural ? ['', ''] : [''];
    translations[context] ??= table();
    translations[context][entry.source] = {
      ...(entry.context ? { msgctxt: entry.context } : {}),
      msgid: entry.source,
      ...(entry.sourcePlural ? { msgid_plural: entry.sourcePlural } : {}),
      msgstr: forms && forms.length ? forms : blank,
      ...(!template && !request.isBase && (entry.fuzzy || entry.previous)
        ? {
            comments: {
              ...(entry.fuzzy ? { flag: 'fuzzy' } : {}),
              ...(entry.previous ? { previous: entry.previous } : {}),
            } as any,
          }
        : {}),
    };
  }
  return gettextParser.po.compile({ charset: 'utf-8', headers, translations });
}
