// FLUTTER_ARB: Application Resource Bundles (Flutter's gen-l10n): a JSON object of ICU
// messages; `@key` holds a message's metadata (description, placeholders), `@@locale` and other
// `@@` keys the file's. A message is one string, its ICU plural or select included (the word
// counter reads ICU). The base language's metadata is written back with its messages: gen-l10n
// needs it in the template file.
import { readJsonText } from './text.js';
import { refuseDeepValue } from './tree.js';
import { exportedText, FormatError, textUnit, type ExportRequest, type ParsedFile, type ParsedUnit } from './types.js';

export function parseArb(bytes: Buffer): ParsedFile {
  const value = readJsonText(bytes, 'FLUTTER_ARB');
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new FormatError('an ARB file holds one JSON object of messages');
  }
  const units: ParsedUnit[] = [];
  const metadata: Record<string, unknown> = Object.create(null);
  let locale: string | null = null;
  for (const [key, message] of Object.entries(value)) {
    if (key === '@@locale' && typeof message === 'string') locale = message;
    if (key.startsWith('@@')) continue;
    if (key.startsWith('@')) {
      // Kept as it is for the export: bounded, as JSON.stringify recurses.
      refuseDeepValue(message, 'FLUTTER_ARB');
      metadata[key.slice(1)] = message;
      continue;
    }
    if (typeof message !== 'string') throw new FormatError(`the ARB message "${key.slice(0, 60)}" is not a string`);
    units.push(textUnit(key, message));
  }
  return {
    units,
    meta: { metadata, localeStyle: locale?.includes('_') || locale?.includes('-') ? 'region' : 'language' },
  };
}

/** The locale as Flutter names it: `de`, or `pt_BR` when the upload named its region. */
function arbLocale(request: ExportRequest): string {
  const [language, region] = request.locale.split('-');
  return request.meta.localeStyle === 'region' && region ? `${language}_${region}` : language;
}

export function writeArb(request: ExportRequest): Buffer {
  const metadata = (request.meta.metadata ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = Object.create(null);
  out['@@locale'] = arbLocale(request);
  for (const entry of request.entries) {
    const text = exportedText(request, entry);
    // A key starting with @ would be read back as metadata (it can only come from another format).
    if (text === null || entry.key.startsWith('@')) continue;
    out[entry.key] = text;
    if (request.isBase && Object.hasOwn(metadata, entry.key)) out[`@${entry.key}`] = metadata[entry.key];
  }
  return Buffer.from(JSON.stringify(out, null, 2) + '\n');
}
