// Safe XML reading for XLIFF, Android resources, .resx and .stringsdict: entity processing is
// off, any DOCTYPE/ENTITY declaration is refused before parsing (so nothing is ever expanded or
// fetched; property lists may carry Apple's own DOCTYPE line, which names no entity), the
// document must be well-formed and at most MAX_XML_DEPTH elements deep, and the text of
// translatable elements is kept raw (inline markup included) through stopNodes.
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { field } from '../../json-fields.js';
import { decodeText, decodeXmlEntities, refuseDoctype } from './text.js';
import { FormatError } from './types.js';

/** Deeper than any real localization file; the readers that recurse stay far from the stack's end. */
export const MAX_XML_DEPTH = 64;

const APPLE_PLIST_DOCTYPE = /<!DOCTYPE\s+plist\s+PUBLIC\s+"-\/\/Apple\/\/DTD PLIST 1\.0\/\/EN"\s+"[^"<>[\]]*"\s*>/;

/**
 * Checks an XML text before any parser sees it, and gives it back ready to parse (Apple's
 * DOCTYPE blanked out: it is a reference to a public DTD, never fetched, that declares no entity).
 */
export function checkXml(text: string, formatName: string, options: { plistDoctype?: boolean } = {}): string {
  const checked = options.plistDoctype
    ? text.replace(APPLE_PLIST_DOCTYPE, (doctype) => ' '.repeat(doctype.length))
    : text;
  refuseDoctype(checked);
  const valid = XMLValidator.validate(checked);
  if (valid !== true) throw new FormatError(`not well-formed XML: ${valid.err.msg} (line ${valid.err.line})`);
  const depth = xmlDepth(checked);
  if (depth > MAX_XML_DEPTH) throw new FormatError(`${formatName} elements nested deeper than ${MAX_XML_DEPTH} levels`);
  return checked;
}

/** The deepest nesting of elements of a well-formed document (markup in comments and CDATA is not markup). */
function xmlDepth(text: string): number {
  const markup = /<!--[\s\S]*?-->|<!\[CDATA\[[\s\S]*?\]\]>|<\?[\s\S]*?\?>|<(\/?)[^\s/>!?][^>]*?(\/?)>/g;
  let depth = 0;
  let deepest = 0;
  for (let match = markup.exec(text); match; match = markup.exec(text)) {
    if (match[0][1] === '!' || match[0][1] === '?') continue;
    if (match[1]) depth--;
    else if (!match[2]) deepest = Math.max(deepest, ++depth);
  }
  return deepest;
}

/**
 * The document as fast-xml-parser gives it: an element is an object (attributes as `@name`, the
 * elements named in `arrays` as lists) or its text alone; read it with field(), elements() and attribute().
 */
export function readXml(bytes: Buffer, formatName: string, rawTextNodes: string[], arrays: string[]): unknown {
  const text = checkXml(decodeText(bytes, { formatName, allowUtf16: false }), formatName);
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@',
    processEntities: false,
    htmlEntities: false,
    parseTagValue: false,
    parseAttributeValue: false,
    trimValues: false,
    stopNodes: rawTextNodes,
    isArray: (name) => arrays.includes(name),
  });
  try {
    return parser.parse(text);
  } catch (error) {
    throw new FormatError(`not well-formed XML: ${(error as Error).message}`);
  }
}

/** The raw inner text of an element read as a stop node (string or {#text, @attrs}). */
export function innerText(node: unknown): string {
  if (node === undefined || node === null) return '';
  if (typeof node === 'string') return node;
  if (typeof node === 'object' && Object.hasOwn(node, '#text')) return String((node as { '#text': unknown })['#text']);
  return '';
}

/** The text of an element that holds only text: entities decoded, CDATA sections taken as they are. */
export function plainText(raw: string, where: string): string {
  return raw
    .split(/(<!\[CDATA\[[\s\S]*?\]\]>)/)
    .map((part, index) => {
      if (index % 2 === 1) return part.slice(9, -3);
      if (part.includes('<')) throw new FormatError(`${where} holds markup where only text is allowed`);
      return decodeXmlEntities(part);
    })
    .join('');
}

// Characters XML 1.0 cannot carry, even as references (a text from another format may hold one).
const NOT_XML =
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Text for element content (or an attribute value): escaped, CR kept as a reference, the other
 * characters XML 1.0 cannot carry replaced by U+FFFD.
 */
export function escapeXmlText(text: string, attribute = false): string {
  const escaped = text
    .replace(NOT_XML, '\ufffd')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\r/g, '&#13;');
  return attribute ? escaped.replace(/"/g, '&quot;').replace(/\n/g, '&#10;').replace(/\t/g, '&#9;') : escaped;
}

/** Same text for XML 1.0: what escapeXmlText keeps (tests and writers that build through a library). */
export const xmlSafe = (text: string): string => text.replace(NOT_XML, '\ufffd');

/** The elements `name` in `node` (readXml's `arrays` makes them a list), none when it has no such child. */
export function elements(node: unknown, name: string): unknown[] {
  const value = field(node, name);
  return Array.isArray(value) ? value : [];
}

export function attribute(node: unknown, name: string): string | undefined {
  const value = field(node, `@${name}`);
  return value === undefined ? undefined : decodeXmlEntities(String(value));
}
