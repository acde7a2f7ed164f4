// YAML (Rails style): nested maps of strings, usually under one root key naming the locale
// (`en: {hello: Hello}`); that root is dropped on import and written back on export.
// Aliases are limited (maxAliasCount) so a "billion laughs" document fails instead of exploding.
import { Lexer, Parser, parseDocument } from 'yaml';
import { findLanguage } from '../locales.js';
import { stringify } from 'yaml';
import { decodeText } from './text.js';
import { buildTree, flattenTree, MAX_DEPTH } from './tree.js';
import { FormatError, type ExportRequest, type ParsedFile } from './types.js';

/**
 * Refuses YAML nested deeper than the tree may be, before it is composed: the composer recurses
 * once per level and overflowed the stack on a deep upload. The parser is iterative; its stack
 * holds one token per level, plus a few for the document and its root locale.
 */
function refuseDeepYaml(text: string) {
  const parser = new Parser();
  for (const lexeme of new Lexer().lex(text)) {
    for (const _ of parser.next(lexeme)); // the documents' tokens: composed later by parseDocument
    if (parser.stack.length > MAX_DEPTH + 4) throw new FormatError(`YAML nesting deeper than ${MAX_DEPTH} levels`);
  }
}

export function parseYaml(bytes: Buffer): ParsedFile {
  const text = decodeText(bytes, { formatName: 'YAML' });
  refuseDeepYaml(text);
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: false, customTags: [] });
  if (document.errors.length) throw new FormatError(`not valid YAML: ${document.errors[0].message.split('\n')[0]}`);
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: 100 });
  } catch (error) {
    throw new FormatError(`YAML refused: ${(error as Error).message.split('\n')[0]}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new FormatError('a YAML file must hold a map of strings');
  }
  const keys = Object.keys(value);
  const rootLocale =
    keys.length === 1 && findLanguage(keys[0]) && typeof (value as any)[keys[0]] === 'object' ? keys[0] : null;
  const tree = rootLocale ? (value as any)[rootLocale] : value;
  return { units: flattenTree(tree, 'YAML'), meta: rootLocale ? { rootLocale } : {} };
}

export function writeYaml(request: ExportRequest): Buffer {
  const tree = buildTree(request);
  // Rails names its roots by language or locale as the upload did (en, or pt-BR).
  const root = request.meta.rootLocale
    ? String(request.meta.rootLocale).includes('-')
      ? request.locale
      : request.locale.split('-')[0]
    : null;
  return Buffer.from(stringify(root ? { [root]: tree } : tree));
}
