// Decoding uploads to text: BOMs, UTF-16 (only where a format allows it) and strict UTF-8,
// so a binary or mis-encoded file fails with a clear message instead of importing garbage.
import { FormatError } from './types.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function decodeText(bytes: Buffer, options: { allowUtf16?: boolean; formatName: string }): string {
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    return strictUtf8(bytes.subarray(3), options.formatName);
  }
  const utf16 = utf16Kind(bytes);
  if (utf16) {
    if (!options.allowUtf16) throw new FormatError(`${options.formatName} files must be UTF-8; this one is UTF-16`);
    const body = bytes.subarray(utf16.bom ? 2 : 0);
    if (body.length % 2 !== 0) throw new FormatError('truncated UTF-16 file (odd number of bytes)');
    const swapped = utf16.endian === 'be' ? Buffer.from(body).swap16() : body;
    try {
      return new TextDecoder('utf-16le', { fatal: true }).decode(swapped);
    } catch {
      throw new FormatError('not valid UTF-16 text');
    }
  }
  return strictUtf8(bytes, options.formatName);
}

/** A JSON upload: UTF-8 text, then JSON.parse (which nests arrays and objects without recursing). */
export function readJsonText(bytes: Buffer, formatName: string): unknown {
  const text = decodeText(bytes, { formatName });
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new FormatError(`not valid JSON: ${(error as Error).message}`);
  }
}

function strictUtf8(bytes: Buffer, formatName: string): string {
  if (bytes.includes(0)) throw new FormatError(`binary content (NUL bytes) is not a ${formatName} file`);
  try {
    return utf8.decode(bytes);
  } catch {
    throw new FormatError(`${formatName} file is not valid UTF-8 text`);
  }
}

/** UTF-16 by its BOM, or by the NULs of ASCII text in every other byte. */
function utf16Kind(bytes: Buffer): { endian: 'le' | 'be'; bom: boolean } | null {
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) return { endian: 'le', bom: true };
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) return { endian: 'be', bom: true };
  if (bytes.length >= 4) {
    const sample = bytes.subarray(0, Math.min(bytes.length - (bytes.length % 2), 512));
    let evenZeros = 0;
    let oddZeros = 0;
    for (let i = 0; i < sample.length; i += 2) {
      if (sample[i] === 0) evenZeros++;
      if (sample[i + 1] === 0) oddZeros++;
    }
    const pairs = sample.length / 2;
    if (oddZeros > pairs * 0.6 && evenZeros === 0) return { endian: 'le', bom: false };
    if (evenZeros > pairs * 0.6 && oddZeros === 0) return { endian: 'be', bom: false };
  }
  return null;
}

// A Map: an entity name from the file (&constructor;) must not find an Object.prototype member.
const XML_ENTITIES = new Map([
  ['amp', '&'],
  ['lt', '<'],
  ['gt', '>'],
  ['quot', '"'],
  ['apos', "'"],
]);

/** Decodes the five XML entities and character references; anything else is an error. */
export function decodeXmlEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|[A-Za-z]+);/g, (whole, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      if (!Number.isFinite(code) || code > 0x10ffff) throw new FormatError(`invalid character reference ${whole}`);
      return String.fromCodePoint(code);
    }
    const known = XML_ENTITIES.get(name);
    if (known === undefined) {
      throw new FormatError(`undeclared entity ${whole}: only the five XML entities are accepted`);
    }
    return known;
  });
}

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** XML with a DTD can define entities (billion laughs, external files): refuse it outright. */
export function refuseDoctype(text: string): void {
  if (/<!DOCTYPE/i.test(text) || /<!ENTITY/i.test(text)) {
    throw new FormatError('XML with a DOCTYPE or ENTITY declaration is refused (entities are never expanded)');
  }
}

/** Key paths of nested formats (JSON, YAML, Android) are stored as JSON arrays. */
export function pathKey(path: (string | number)[]): string {
  return JSON.stringify(path);
}

const isSegment = (segment: unknown) =>
  typeof segment === 'string' || (Number.isSafeInteger(segment) && (segment as number) >= 0);

/** The path of a key; a key that is no such path (an iOS key "[x]" of a file now JSON) is one segment. */
export function keyPath(key: string): (string | number)[] {
  try {
    const parsed: unknown = JSON.parse(key);
    if (Array.isArray(parsed) && parsed.length > 0 && parsed.every(isSegment)) return parsed;
  } catch {
    // a plain key
  }
  return [key];
}
