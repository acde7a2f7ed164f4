// Safe XML reading for XLIFF and Android resources with fast-xml-parser: entity processing is
// off, any DOCTYPE/ENTITY declaration is refused before parsing (so nothing is ever expanded or
// fetched), the document must be well-formed, and the text of translatable elements is kept raw
// (inline markup included) through stopNodes.
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { decodeText, decodeXmlEntities, refuseDoctype } from './text.js';
import { FormatError } from './types.js';

export function readXml(bytes: Buffer, formatName: string, rawTextNodes: string[], arrays: string[]): any {
  const text = decodeText(bytes, { formatName, allowUtf16: false });
  refuseDoctype(text);
  const valid = XMLValidator.validate(text);
  if (valid !== true) throw new FormatError(`not well-formed XML: ${valid.err.msg} (line ${valid.err.line})`);
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

export function attribute(node: unknown, name: string): string | undefined {
  if (!node || typeof node !== 'object') return undefined;
  const value = (node as any)[`@${name}`];
  return value === undefined ? undefined : decodeXmlEntities(String(value));
}
