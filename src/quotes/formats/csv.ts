// CSV: a spreadsheet of strings, read by csv-parse and written by csv-stringify. OneSky's API
// names no CSV format; quartet's convention is the one of spreadsheet-based tools: a header row,
// the first column the key, one column per language named by its code (`en`, `de-DE`, `pt_BR`),
// and optional `comment`/`description`/`context`/`note` columns that are not texts. An upload
// reads the column of its locale; a file with a single text column (`key,value`) is read as the
// upload's language. An empty cell is an untranslated string. Commas, semicolons or tabs (as
// Excel writes them by region, or as "Unicode text" in UTF-16) separate the columns, whichever
// the header uses most.
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { pickLocale } from './locale-match.js';
import { decodeText } from './text.js';
import { FormatError, textUnit, type ExportRequest, type ParsedFile, type ParseOptions } from './types.js';

const NOTES = /^(?:comments?|descriptions?|context|notes?|max[ _-]?length)$/i;
const MAX_COLUMNS = 1000;

function headerDelimiter(text: string): string {
  const end = text.search(/\r?\n/);
  const header = (end < 0 ? text : text.slice(0, end)).replace(/"[^"]*"/g, '');
  const counts = [',', ';', '\t'].map((delimiter) => [delimiter, header.split(delimiter).length] as const);
  return counts.reduce((best, next) => (next[1] > best[1] ? next : best))[0];
}

export function parseCsv(bytes: Buffer, options: ParseOptions): ParsedFile {
  const text = decodeText(bytes, { formatName: 'CSV', allowUtf16: true });
  const delimiter = headerDelimiter(text);
  let records: string[][];
  try {
    records = parse(text, {
      delimiter,
      relax_column_count: true,
      skip_empty_lines: true,
      max_record_size: 1 << 20,
    });
  } catch (error) {
    throw new FormatError(`not valid CSV: ${(error as Error).message}`);
  }
  const [header, ...rows] = records;
  if (!header || header.length < 2 || header.length > MAX_COLUMNS) {
    throw new FormatError(`a CSV file starts with a header row: the key column, then one column per language`);
  }
  const texts = header.flatMap((name, index) => (index > 0 && !NOTES.test(name.trim()) ? [name.trim()] : []));
  const language = pickLocale(texts, options.locale) ?? (texts.length === 1 ? texts[0] : undefined);
  if (language === undefined) {
    const named = texts.map((name) => `"${name.slice(0, 20)}"`).join(', ');
    throw new FormatError(`no column for ${options.locale}: the header names ${named.slice(0, 300) || 'no language'}`);
  }
  const column = header.findIndex((name, index) => index > 0 && name.trim() === language);
  const seen = new Set<string>();
  const units = rows.flatMap((row, index) => {
    if (row.every((cell) => cell.trim() === '')) return [];
    const key = row[0];
    if (key === '') throw new FormatError(`row ${index + 2} has a text but no key`);
    if (seen.has(key)) throw new FormatError(`duplicate key "${key.slice(0, 60)}" at row ${index + 2}`);
    seen.add(key);
    return [textUnit(key, row[column] ?? '')];
  });
  return { units, meta: { delimiter, keyHeader: header[0], languages: texts } };
}

/**
 * The key, the source and (for a translation) the locale's column, named as the base upload
 * named them; untranslated strings keep their row with an empty cell. With a BOM, as Excel
 * needs to read UTF-8.
 */
export function writeCsv(request: ExportRequest): Buffer {
  const languages = Array.isArray(request.meta.languages) ? request.meta.languages.map(String) : [];
  const name = (locale: string) => pickLocale(languages, locale) ?? locale;
  const keyHeader = typeof request.meta.keyHeader === 'string' ? request.meta.keyHeader : 'key';
  const header = [keyHeader, name(request.sourceLocale), ...(request.isBase ? [] : [name(request.locale)])];
  const rows = request.entries.map((entry) =>
    request.isBase ? [entry.key, entry.source] : [entry.key, entry.source, entry.forms?.[0] ?? ''],
  );
  const delimiter = typeof request.meta.delimiter === 'string' ? request.meta.delimiter : ',';
  return Buffer.from(stringify([header, ...rows], { delimiter, bom: true }));
}
