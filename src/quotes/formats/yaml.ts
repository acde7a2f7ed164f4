// YAML (Rails style): nested maps of strings, usually under one root key naming the locale
// (`en: {hello: Hello}`); that root is dropped on import and written back on export.
// RUBY_YAML / RUBY_YML (OneSky's names for Rails i18n files) require that root key, and read
// a map of plural categories (`{one: "1 file", other: "%{count} files"}`) as one plural string.
// Aliases are limited (maxAliasCount) so a "billion laughs" document fails instead of exploding.
import { Lexer, Parser, parseDocument } from 'yaml';
import { isRecord } from '../../json-fields.js';
import { findLanguage } from '../common/locales.js';
import { stringify } from 'yaml';
import { sameLanguage } from './locale-match.js';
import { completeForms, isPlural, isPluralCategory, readPlural } from './plural.js';
import { decodeText, pathKey } from './text.js';
import { buildTree, flattenTree, MAX_DEPTH } from './tree.js';
import { exportedText, FormatError, type ExportRequest, type ParsedFile, type ParseOptions } from './types.js';

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

/** The document as a map, and its root locale key when it has exactly one. */
function readYaml(bytes: Buffer): { value: Record<string, unknown>; rootLocale: string | null } {
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
  if (!isRecord(value) || Array.isArray(value)) throw new FormatError('a YAML file must hold a map of strings');
  const keys = Object.keys(value);
  const rootLocale = keys.length === 1 && findLanguage(keys[0]) && typeof value[keys[0]] === 'object' ? keys[0] : null;
  return { value, rootLocale };
}

export function parseYaml(bytes: Buffer): ParsedFile {
  const { value, rootLocale } = readYaml(bytes);
  const tree = rootLocale ? value[rootLocale] : value;
  return { units: flattenTree(tree, 'YAML'), meta: rootLocale ? { rootLocale } : {} };
}

export function parseRailsYaml(bytes: Buffer, options: ParseOptions): ParsedFile {
  const { value, rootLocale } = readYaml(bytes);
  if (!rootLocale) {
    throw new FormatError('a Rails YAML file has a single root key, its locale (en:, pt-BR:), holding the strings');
  }
  if (!sameLanguage(rootLocale, options.locale)) {
    throw new FormatError(`the file's root key "${rootLocale}" is not the upload's locale ${options.locale}`);
  }
  const plural = (node: object, path: (string | number)[]) => {
    const entries = Array.isArray(node) ? [] : Object.entries(node);
    const isPluralMap =
      entries.length > 0 &&
      entries.every(([name, text]) => isPluralCategory(name) && typeof text === 'string') &&
      Object.hasOwn(node, 'other');
    if (!isPluralMap) return null;
    const forms = readPlural(options.locale, new Map(entries as [string, string][]));
    return { key: pathKey(path), context: null, ...forms, fuzzy: false, stale: false };
  };
  return { units: flattenTree(value[rootLocale], 'RUBY_YAML', plural), meta: { rootLocale } };
}

/** Rails names its roots by language or locale as the upload did (en, or pt-BR). */
function rootName(request: ExportRequest): string | null {
  if (!request.meta.rootLocale) return null;
  return String(request.meta.rootLocale).includes('-') ? request.locale : request.locale.split('-')[0];
}

export function writeYaml(request: ExportRequest): Buffer {
  const tree = buildTree(request);
  const root = rootName(request);
  return Buffer.from(stringify(root ? { [root]: tree } : tree));
}

export function writeRailsYaml(request: ExportRequest): Buffer {
  const tree = buildTree(request, (entry) => {
    if (!isPlural(request, entry)) return exportedText(request, entry);
    const forms = completeForms(request, entry);
    return forms ? Object.assign(Object.create(null), Object.fromEntries(forms)) : null;
  });
  return Buffer.from(stringify({ [rootName(request) ?? request.locale.split('-')[0]]: tree }));
}
