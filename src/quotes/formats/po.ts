// GNU gettext PO and POT files: read by po-reader.ts as GNU gettext reads them, written back by
// gettext-parser.
// - the header entry (empty msgid) is not a phrase; obsolete `#~` entries are never read;
// - an entry is keyed by msgctxt + EOT + msgid (gettext's own convention for contexts); an empty
//   `msgctxt ""` is a context of its own, as in gettext;
// - the states are msgfmt's: an entry is untranslated when its msgstr (msgstr[0] for plurals) is
//   empty, else fuzzy with `#, fuzzy`, else translated; a plural with a later form empty is
//   translated, as `msgfmt --statistics` and `msgattrib --translated` count it;
// - `#| msgid "…"` (msgmerge --previous) on a fuzzy entry names the source the translation was
//   made for: when it differs from the current msgid the translation is stale, i.e. "outdated".
import * as gettextParser from 'gettext-parser';
import type { GetTextTranslations } from 'gettext-parser';
import { PoError, readPoText, type PoMessage } from './po-reader.js';
import { FormatError, type ExportRequest, type ParsedFile, type ParsedUnit } from './types.js';

const EOT = '\u0004';

export function poKey(context: string | null, msgid: string): string {
  return context === null ? msgid : `${context}${EOT}${msgid}`;
}

export function parsePo(bytes: Buffer, formatName: string): ParsedFile {
  if (bytes.includes(0)) {
    throw new FormatError(`binary content (NUL bytes) is not a ${formatName} file (UTF-16 PO files are not supported)`);
  }
  const { text, decodeBytes } = decodePo(bytes, formatName);
  let catalog;
  try {
    catalog = readPoText(text, decodeBytes);
  } catch (error) {
    if (error instanceof PoError) throw new FormatError(`not a valid ${formatName} file: ${error.message}`);
    throw error;
  }
  const units: ParsedUnit[] = catalog.messages.map(toUnit);
  return { units, meta: { headers: pickHeaders(headerFields(catalog.header ?? '')) } };
}

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * The file's text in the charset its header declares (UTF-8 when it declares none, or a
 * template's CHARSET), and how to decode the bytes of escapes such as "\303\251".
 */
function decodePo(
  bytes: Buffer,
  formatName: string,
): { text: string; decodeBytes: (escaped: number[], line: number) => string } {
  // msgfmt refuses a byte order mark (a syntax error on line 1); editors on Windows add one.
  if (bytes.subarray(0, 3).equals(UTF8_BOM)) bytes = bytes.subarray(3);
  const head = bytes.subarray(0, 8192).toString('latin1');
  const declared = /charset=([A-Za-z0-9_.:-]+)/i.exec(head)?.[1];
  const charset = !declared || /^(charset|utf-?8|(us-)?ascii)$/i.test(declared) ? 'utf-8' : declared.toLowerCase();
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(/^(iso-?8859-1|latin-?1)$/.test(charset) ? 'latin1' : charset, { fatal: true });
  } catch {
    throw new FormatError(
      `not a valid ${formatName} file: its charset "${declared}" is not supported; convert it to UTF-8 ` +
        '(msgconv --to-code=UTF-8)',
    );
  }
  // WHATWG's "latin1" is windows-1252; ISO-8859-1 maps every byte to the same code point.
  const decode = (part: Uint8Array) =>
    decoder.encoding === 'windows-1252' && /8859-1$|latin-?1$/.test(charset)
      ? Buffer.from(part).toString('latin1')
      : decoder.decode(part);
  const decodeBytes = (escaped: number[], line: number) => {
    try {
      return decode(Uint8Array.from(escaped));
    } catch {
      throw new PoError(line, `invalid multibyte sequence in escapes of a string (charset ${charset})`);
    }
  };
  try {
    return { text: decode(bytes), decodeBytes };
  } catch {
    throw new FormatError(
      `not a valid ${formatName} file: line ${badLine(bytes, decode)}: invalid multibyte sequence: the file is ` +
        `not valid ${charset === 'utf-8' ? 'UTF-8 (and declares no other charset)' : declared}`,
    );
  }
}

/** The first line that does not decode (only when the whole file did not). */
function badLine(bytes: Buffer, decode: (part: Uint8Array) => string): number {
  let line = 1;
  for (let start = 0; start < bytes.length; line++) {
    let end = bytes.indexOf(0x0a, start);
    if (end < 0) end = bytes.length;
    try {
      decode(bytes.subarray(start, end));
    } catch {
      return line;
    }
    start = end + 1;
  }
  return line;
}

/** The header's "Name: value" lines. */
function headerFields(header: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of header.split('\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  return fields;
}

function toUnit(message: PoMessage): ParsedUnit {
  const { context } = message;
  return {
    key: poKey(context, message.msgid),
    context,
    source: message.msgid,
    sourcePlural: message.msgidPlural,
    forms: message.msgstr,
    untranslated: message.msgstr[0] === '',
    fuzzy: message.fuzzy,
    // msgmerge writes "#|" only on the entries it made fuzzy; an entry approved since is current.
    stale: message.fuzzy && message.previousMsgid !== null && message.previousMsgid !== message.msgid,
    previous: message.previous,
  };
}

function pickHeaders(fields: Map<string, string>): Record<string, string> {
  const keep: Record<string, string> = {};
  for (const name of ['Project-Id-Version', 'Plural-Forms']) {
    const value = fields.get(name);
    if (value) keep[name] = value;
  }
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
    // gettext-parser writes no empty msgctxt: such entries go under EOT (never in a PO string),
    // replaced by `msgctxt ""` in the written file.
    const context = entry.context === null ? '' : entry.context || EOT;
    const forms = template
      ? null
      : request.isBase
        ? [entry.source, ...(entry.sourcePlural ? [entry.sourcePlural] : [])]
        : entry.forms;
    const blank = entry.sourcePlural ? ['', ''] : [''];
    translations[context] ??= table();
    translations[context][entry.source] = {
      ...(context ? { msgctxt: context } : {}),
      msgid: entry.source,
      ...(entry.sourcePlural ? { msgid_plural: entry.sourcePlural } : {}),
      msgstr: forms && forms.length ? forms : blank,
      ...(!template && !request.isBase && (entry.fuzzy || entry.previous)
        ? {
            comments: {
              ...(entry.fuzzy ? { flag: 'fuzzy' } : {}),
              ...(entry.previous ? { previous: entry.previous } : {}),
            },
          }
        : {}),
    };
  }
  const written = gettextParser.po.compile({ charset: 'utf-8', headers, translations });
  if (!translations[EOT]) return written;
  return Buffer.from(written.toString('utf8').replaceAll(`msgctxt "${EOT}"`, 'msgctxt ""'));
}
