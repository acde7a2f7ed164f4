// The file formats the service imports and exports, by their OneSky names (and, for formats
// OneSky does not list, names in the same style: CSV, IOS_XCSTRINGS, FLUTTER_ARB).
import { parseAndroid, writeAndroid } from './android.js';
import { parseArb, writeArb } from './arb.js';
import { parseCsv, writeCsv } from './csv.js';
import { parseIni, writeIni } from './ini.js';
import { parseIosStrings, writeIosStrings } from './ios.js';
import { parseJson, writeJson } from './json.js';
import { parsePhp, writePhp } from './php.js';
import { parsePhraseCollection, writePhraseCollection } from './phrase-collection.js';
import { parsePo, writePo } from './po.js';
import { parseProperties, writeProperties } from './properties.js';
import { parseResx, writeResx } from './resx.js';
import { parseStringsdict, writeStringsdict } from './stringsdict.js';
import { parseXcstrings, writeXcstrings } from './xcstrings.js';
import { parseXliff, writeXliff } from './xliff.js';
import { parseRailsYaml, parseYaml, writeRailsYaml, writeYaml } from './yaml.js';
import type { ExportRequest, ParsedFile, ParseOptions } from './types.js';

export const FILE_FORMATS = [
  'GNU_PO',
  'GNU_POT',
  'HIERARCHICAL_JSON',
  'XLIFF',
  'ANDROID_XML',
  'IOS_STRINGS',
  'IOS_STRINGSDICT_XML',
  'IOS_XCSTRINGS',
  'YAML',
  'RUBY_YAML',
  'RUBY_YML',
  'JAVA_PROPERTIES',
  'RESX',
  'CSV',
  'PHP',
  'PHP_SHORT_ARRAY',
  'PHP_VARIABLES',
  'INI',
  'FLUTTER_ARB',
  'PHRASE_COLLECTION',
] as const;
export type FileFormat = (typeof FILE_FORMATS)[number];

interface FormatHandler {
  parse(bytes: Buffer, options: ParseOptions): ParsedFile | Promise<ParsedFile>;
  /** .stringsdict loads its (ES module) plist library first. */
  write(request: ExportRequest): Buffer | Promise<Buffer>;
  /** Content type of an export. */
  mime: string;
}

const XML = 'application/xml; charset=utf-8';
const JSON_MIME = 'application/json; charset=utf-8';
const PHP_MIME = 'application/x-httpd-php; charset=utf-8';
const rails: FormatHandler = { parse: parseRailsYaml, write: writeRailsYaml, mime: 'application/yaml; charset=utf-8' };

export const FORMATS = {
  GNU_PO: {
    parse: (b) => parsePo(b, 'GNU_PO'),
    write: (r) => writePo(r, false),
    mime: 'text/x-gettext-translation; charset=utf-8',
  },
  GNU_POT: {
    parse: (b) => parsePo(b, 'GNU_POT'),
    write: (r) => writePo(r, r.isBase),
    mime: 'text/x-gettext-translation; charset=utf-8',
  },
  HIERARCHICAL_JSON: { parse: parseJson, write: writeJson, mime: JSON_MIME },
  XLIFF: { parse: parseXliff, write: writeXliff, mime: 'application/xliff+xml; charset=utf-8' },
  ANDROID_XML: { parse: parseAndroid, write: writeAndroid, mime: XML },
  IOS_STRINGS: { parse: parseIosStrings, write: writeIosStrings, mime: 'text/plain; charset=utf-8' },
  IOS_STRINGSDICT_XML: { parse: parseStringsdict, write: writeStringsdict, mime: XML },
  IOS_XCSTRINGS: { parse: parseXcstrings, write: writeXcstrings, mime: JSON_MIME },
  YAML: { parse: parseYaml, write: writeYaml, mime: 'application/yaml; charset=utf-8' },
  RUBY_YAML: rails,
  RUBY_YML: rails,
  JAVA_PROPERTIES: {
    parse: parseProperties,
    // ISO-8859-1 unless the upload was UTF-8 (properties.ts); either way the bytes say which.
    write: writeProperties,
    mime: 'text/x-java-properties',
  },
  RESX: { parse: parseResx, write: writeResx, mime: XML },
  CSV: { parse: parseCsv, write: writeCsv, mime: 'text/csv; charset=utf-8' },
  PHP: { parse: (b) => parsePhp(b, 'PHP'), write: (r) => writePhp(r, 'array'), mime: PHP_MIME },
  PHP_SHORT_ARRAY: { parse: (b) => parsePhp(b, 'PHP_SHORT_ARRAY'), write: (r) => writePhp(r, 'short'), mime: PHP_MIME },
  PHP_VARIABLES: { parse: (b) => parsePhp(b, 'PHP_VARIABLES'), write: (r) => writePhp(r, 'variables'), mime: PHP_MIME },
  INI: { parse: parseIni, write: writeIni, mime: 'text/plain; charset=utf-8' },
  FLUTTER_ARB: { parse: parseArb, write: writeArb, mime: JSON_MIME },
  // A phrase collection's strings (the phrase-collections import stores each collection as one).
  PHRASE_COLLECTION: { parse: parsePhraseCollection, write: writePhraseCollection, mime: JSON_MIME },
} satisfies Record<FileFormat, FormatHandler>;

export function isFileFormat(value: string): value is FileFormat {
  return (FILE_FORMATS as readonly string[]).includes(value);
}

export { FormatError } from './types.js';
export type { ParsedFile, ParsedUnit, ParseOptions, ExportEntry, ExportRequest } from './types.js';
