// IOS_STRINGSDICT_XML: Apple's .stringsdict property lists, read and written with the plist
// package (its XML is checked by xml.ts first: Apple's DOCTYPE line only, no entities).
// Each key holds NSStringLocalizedFormatKey ("%#@files@ in %#@folders@") and one dictionary per
// variable. Strings, keyed by path:
// - [key]: the format, when it holds text besides variable references (a bare "%#@files@" is
//   not a text to translate; it is kept in the file's meta);
// - [key, variable]: a NSStringPluralRuleType variable, a plural whose forms are its categories;
// - [key, rule, name]: the texts of NSStringVariableWidthRuleType and NSStringDeviceSpecificRuleType
//   (by width or device), and of a variable of another rule type.
import { decodeText, keyPath, pathKey } from './text.js';
import { completeForms, isPluralCategory, namedForms, readPlural } from './plural.js';
import { checkXml, xmlSafe } from './xml.js';
import {
  exportedText,
  FormatError,
  hasText,
  textUnit,
  type ExportEntry,
  type ExportRequest,
  type ParsedFile,
  type ParseOptions,
  type ParsedUnit,
} from './types.js';

// plist is an ES module only. Run from the TypeScript sources (tsx: tests, npm run demo), the
// file pool's threads load this module as CommonJS, where a static import of it fails; a dynamic
// import works either way.
const plistModule = import('plist');

const FORMAT_KEY = 'NSStringLocalizedFormatKey';
const SPEC_KEY = 'NSStringFormatSpecTypeKey';
const VALUE_KEY = 'NSStringFormatValueTypeKey';
const PLURAL_RULE = 'NSStringPluralRuleType';
/** Rules that are keys of the entry itself, each a dictionary of texts by width or device. */
const ENTRY_RULES = new Set(['NSStringVariableWidthRuleType', 'NSStringDeviceSpecificRuleType']);
/** A format made only of variable references, e.g. "%#@files@" or "%1$#@count@". */
const BARE_FORMAT = /^(?:\s*%(?:\d+\$)?#@[^@]*@)+\s*$/;

type Dict = Record<string, unknown>;
const isDict = (value: unknown): value is Dict =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date);

/** What an export needs beyond the strings: bare formats, and each variable's rule and value type. */
interface KeyMeta {
  format?: string;
  variables: Record<string, { spec: string; valueType?: string }>;
}

async function readPlistText(bytes: Buffer): Promise<unknown> {
  const text = checkXml(decodeText(bytes, { formatName: 'IOS_STRINGSDICT_XML' }), 'IOS_STRINGSDICT_XML', {
    plistDoctype: true,
  });
  const { parse } = await plistModule;
  try {
    return parse(text);
  } catch (error) {
    throw new FormatError(`not a property list: ${(error as Error).message.split('\n')[0]}`);
  }
}

export async function parseStringsdict(bytes: Buffer, options: ParseOptions): Promise<ParsedFile> {
  const root = await readPlistText(bytes);
  if (!isDict(root)) throw new FormatError('a .stringsdict file holds a dictionary (<dict>) of strings');
  const units: ParsedUnit[] = [];
  const keys: Record<string, KeyMeta> = Object.create(null);
  const string = (value: unknown, where: string): string => {
    if (typeof value !== 'string') throw new FormatError(`${where} must be a <string>`);
    return value;
  };
  for (const [key, entry] of Object.entries(root)) {
    if (!isDict(entry)) throw new FormatError(`"${key.slice(0, 60)}" must be a <dict> with ${FORMAT_KEY}`);
    const meta: KeyMeta = { variables: Object.create(null) };
    keys[key] = meta;
    for (const [name, value] of Object.entries(entry)) {
      const where = `"${key.slice(0, 60)}" → ${name.slice(0, 60)}`;
      if (name === FORMAT_KEY) {
        const format = string(value, where);
        if (BARE_FORMAT.test(format)) meta.format = format;
        else units.push(textUnit(pathKey([key]), format));
      } else if (ENTRY_RULES.has(name) && isDict(value)) {
        meta.variables[name] = { spec: name };
        for (const [width, text] of Object.entries(value)) {
          units.push(textUnit(pathKey([key, name, width]), string(text, `${where} → ${width}`)));
        }
      } else if (isDict(value) && typeof value[SPEC_KEY] === 'string') {
        const spec = value[SPEC_KEY];
        const valueType = typeof value[VALUE_KEY] === 'string' ? value[VALUE_KEY] : undefined;
        meta.variables[name] = { spec, ...(valueType === undefined ? {} : { valueType }) };
        const texts = Object.entries(value).filter(([child]) => child !== SPEC_KEY && child !== VALUE_KEY);
        if (spec === PLURAL_RULE) {
          const named = new Map<string, string>();
          for (const [category, text] of texts) {
            if (isPluralCategory(category)) named.set(category, string(text, `${where} → ${category}`));
          }
          if (!named.has('other')) throw new FormatError(`${where}: a plural rule needs its "other" form`);
          const plural = readPlural(options.locale, named);
          units.push({ key: pathKey([key, name]), context: null, ...plural, fuzzy: false, stale: false });
        } else {
          for (const [child, text] of texts) {
            units.push(textUnit(pathKey([key, name, child]), string(text, `${where} → ${child}`)));
          }
        }
      }
      // Anything else (a stray value) is not a string of the file.
    }
    if (!Object.hasOwn(entry, FORMAT_KEY) && !Object.keys(meta.variables).some((name) => ENTRY_RULES.has(name))) {
      throw new FormatError(`"${key.slice(0, 60)}" has no ${FORMAT_KEY}`);
    }
  }
  return { units, meta: { keys } };
}

/**
 * A key is written when any of its strings has a translation (all of them in the base
 * language); its untranslated parts then keep the source text, so the entry stays whole.
 */
export async function writeStringsdict(request: ExportRequest): Promise<Buffer> {
  const { build } = await plistModule;
  const keys: Record<string, KeyMeta> = isDict(request.meta.keys) ? (request.meta.keys as Record<string, KeyMeta>) : {};
  const groups = new Map<string, ExportEntry[]>();
  for (const entry of request.entries) {
    const key = String(keyPath(entry.key)[0]);
    const group = groups.get(key) ?? [];
    group.push(entry);
    groups.set(key, group);
  }
  const root: Dict = Object.create(null);
  for (const [key, entries] of groups) {
    if (!request.isBase && !entries.some((entry) => hasText(request, entry))) continue;
    const meta: KeyMeta | undefined = Object.hasOwn(keys, key) ? keys[key] : undefined;
    const variables = meta?.variables ?? {};
    const dict: Dict = Object.create(null);
    if (meta?.format !== undefined) dict[FORMAT_KEY] = meta.format;
    for (const entry of entries) {
      const path = keyPath(entry.key).map(String);
      if (path.length === 1) {
        dict[FORMAT_KEY] = xmlSafe(exportedText(request, entry) ?? entry.source);
      } else if (path.length === 2) {
        const variable = Object.hasOwn(variables, path[1]) ? variables[path[1]] : { spec: PLURAL_RULE, valueType: 'd' };
        const forms = completeForms(request, entry) ?? namedForms({ ...request, isBase: true }, entry);
        const rule: Dict = Object.create(null);
        rule[SPEC_KEY] = variable.spec;
        if (variable.valueType !== undefined) rule[VALUE_KEY] = variable.valueType;
        for (const [category, text] of forms) rule[category] = xmlSafe(text);
        dict[path[1]] = rule;
      } else if (path.length === 3) {
        const variable = Object.hasOwn(variables, path[1]) ? variables[path[1]] : { spec: path[1] };
        const rule = (isDict(dict[path[1]]) ? dict[path[1]] : (dict[path[1]] = Object.create(null))) as Dict;
        if (!ENTRY_RULES.has(variable.spec)) rule[SPEC_KEY] ??= variable.spec;
        rule[path[2]] = xmlSafe(exportedText(request, entry) ?? entry.source);
      }
    }
    // A file first uploaded in another format has no format string: the first variable is the text.
    const first = Object.keys(dict).find((name) => name !== FORMAT_KEY && !ENTRY_RULES.has(name));
    if (dict[FORMAT_KEY] === undefined && first !== undefined) dict[FORMAT_KEY] = `%#@${first}@`;
    root[key] = dict;
  }
  return Buffer.from(build(root as Parameters<typeof build>[0]) + '\n');
}
