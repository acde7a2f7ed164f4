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

export function parsePo(bytes: Buffer, formatName: string): ParsedFile {
  if (bytes.includes(0)) throw new FormatError(`binary content (NUL bytes) is not a ${formatName} file (UTF-16 PO files are not supported)`);
  let parsed: GetTextTranslations;
  try {
    parsed = gettextParser.po.parse(bytes, { defaultCharset: 'utf-8', validation: true });
  } catch (error) {
    throw new FormatError(`not a valid ${formatName} file: ${(error as Error).message.replace(/^Error parsing PO data: /, '')}`);
  }
  const units: ParsedUnit[] = [];
  for (const [context, entries] of Object.entries(parsed.translations)) {
    for (const entry of Object.values(entries)) {
      if (entry.msgid === '' && !context) continue; // the header
      units.push(toUnit(entry, context || null));
    }
  }
  return { units, meta: { headers: pickHeaders(parsed.headers) } };
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
