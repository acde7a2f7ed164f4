// The file formats the service imports and exports, by their OneSky names.
import { parseAndroid, writeAndroid } from './android.js';
import { parseIosStrings, writeIosStrings } from './ios.js';
import { parseJson, writeJson } from './json.js';
import { parsePo, writePo } from './po.js';
import { parseXliff, writeXliff } from './xliff.js';
import { parseYaml, writeYaml } from './yaml.js';
import type { ExportRequest, ParsedFile } from './types.js';

export const FILE_FORMATS = [
  'GNU_PO',
  'GNU_POT',
  'HIERARCHICAL_JSON',
  'XLIFF',
  'ANDROID_XML',
  'IOS_STRINGS',
  'YAML',
] as const;
export type FileFormat = (typeof FILE_FORMATS)[number];

interface FormatHandler {
  parse(bytes: Buffer): ParsedFile | Promise<ParsedFile>;
  write(request: ExportRequest): Buffer;
  /** Content type of an export. */
  mime: string;
}

export const FORMATS: Record<FileFormat, FormatHandler> = {
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
  HIERARCHICAL_JSON: { parse: parseJson, write: writeJson, mime: 'application/json; charset=utf-8' },
  XLIFF: { parse: parseXliff, write: writeXliff, mime: 'application/xliff+xml; charset=utf-8' },
  ANDROID_XML: { parse: parseAndroid, write: writeAndroid, mime: 'application/xml; charset=utf-8' },
  IOS_STRINGS: { parse: parseIosStrings, write: writeIosStrings, mime: 'text/plain; charset=utf-8' },
  YAML: { parse: parseYaml, write: writeYaml, mime: 'application/yaml; charset=utf-8' },
};

export function isFileFormat(value: string): value is FileFormat {
  return (FILE_FORMATS as readonly string[]).includes(value);
}

export { FormatError } from './types.js';
export type { ParsedFile, ParsedUnit, ExportEntry, ExportRequest } from './types.js';
