// PHRASE_COLLECTION: the strings of one OneSky phrase collection (reference/phrase_collection_format.md),
// `{"<string_key>": {"string": "…", "description": "…", "length_limit": {"type": "absolute" | "relative",
// "value": 80, "is_exceed_allowed": true}}}`. The phrase-collections import sends each collection's
// object as such a file; a translation uploads the same shape with the translated "string".
import { readJsonText } from './text.js';
import { FormatError, hasText, type ExportRequest, type ParsedFile, type ParsedUnit } from './types.js';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const field = (record: Record<string, unknown>, name: string) =>
  Object.hasOwn(record, name) ? record[name] : undefined;

/** A length limit as stored: JSON with its three fields in OneSky's order. */
function lengthLimitOf(where: string, value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) throw new FormatError(`${where}.length_limit: must be an object`);
  const type = field(value, 'type');
  if (type !== 'absolute' && type !== 'relative') {
    throw new FormatError(`${where}.length_limit.type: must be "absolute" or "relative"`);
  }
  const raw = field(value, 'value');
  // The format's structure shows the value quoted, its samples as a number: both are read.
  const limit = typeof raw === 'string' && /^\d{1,9}$/.test(raw) ? Number(raw) : raw;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 1_000_000_000) {
    throw new FormatError(`${where}.length_limit.value: must be a whole number from 1`);
  }
  const exceed = field(value, 'is_exceed_allowed') ?? true;
  if (typeof exceed !== 'boolean') throw new FormatError(`${where}.length_limit.is_exceed_allowed: must be a boolean`);
  return JSON.stringify({ type, value: limit, is_exceed_allowed: exceed });
}

/**
 * The strings of one collection (its value in the import's `collections`), refused with a message
 * that names `where` and the path into it. Called on the request's thread to answer a 400, and in
 * the file pool's threads to read the stored upload.
 */
export function readCollection(where: string, collection: unknown): ParsedUnit[] {
  if (!isObject(collection)) throw new FormatError(`${where}: must be an object of strings by their key`);
  const units: ParsedUnit[] = [];
  for (const [key, value] of Object.entries(collection)) {
    const at = `${where}.${key.slice(0, 100)}`;
    if (key === '') throw new FormatError(`${where}: a string key is empty`);
    if (!isObject(value)) throw new FormatError(`${at}: must be an object with a "string"`);
    const text = field(value, 'string');
    if (typeof text !== 'string') throw new FormatError(`${at}.string: required, a string`);
    const description = field(value, 'description') ?? null;
    if (description !== null && typeof description !== 'string') {
      throw new FormatError(`${at}.description: must be a string`);
    }
    units.push({
      key,
      context: null,
      source: text,
      sourcePlural: null,
      forms: [text],
      fuzzy: false,
      stale: false,
      description: description || null,
      lengthLimit: lengthLimitOf(at, field(value, 'length_limit')),
    });
  }
  if (!units.length) throw new FormatError(`${where}: has no strings`);
  return units;
}

export function parsePhraseCollection(bytes: Buffer): ParsedFile {
  return { units: readCollection('the collection', readJsonText(bytes, 'PHRASE_COLLECTION')), meta: {} };
}

/** The collection in the format it was imported in: the language's texts with their descriptions and limits. */
export function writePhraseCollection(request: ExportRequest): Buffer {
  // Null prototype: string keys from the data are never properties of an ordinary object.
  const collection: Record<string, unknown> = Object.create(null);
  for (const entry of request.entries) {
    if (!hasText(request, entry)) continue;
    const string = request.isBase ? entry.source : entry.forms![0];
    collection[entry.key] = {
      string,
      ...(entry.description ? { description: entry.description } : {}),
      ...(entry.lengthLimit ? { length_limit: JSON.parse(entry.lengthLimit) } : {}),
    };
  }
  return Buffer.from(JSON.stringify(collection, null, 2) + '\n');
}
