// IOS_XCSTRINGS: Apple's String Catalogs (Xcode 15+), a JSON file holding every language:
// { sourceLanguage, version, strings: { key: { comment, extractionState, shouldTranslate,
// localizations: { de: { stringUnit: { state, value } | variations | substitutions } } } } }.
// An upload reads the localization of its locale (`de` for de-DE, `zh-Hant` for zh-TW); in
// the source language a string without one is its key, as in Xcode. States: `translated`
// approved, `needs_review` not approved, `new` not translated, `stale` outdated. Strings with
// shouldTranslate false, no longer in the code (extractionState `stale`, Xcode's "Stale"), or
// with an empty key are not strings to translate. Keyed by path:
// - [key]: the string (a plural when it varies by plural);
// - [key, 'device', device]: a device variation (iphone, mac…), plural or not;
// - [key, 'substitutions', name]: a substitution's plural ("%#@files@").
import { pickLocale, sameLanguage } from './locale-match.js';
import { isPlural, isPluralCategory, namedForms, readPlural } from './plural.js';
import { keyPath, pathKey, readJsonText } from './text.js';
import {
  exportedText,
  FormatError,
  hasText,
  type ExportEntry,
  type ExportRequest,
  type ParsedFile,
  type ParseOptions,
  type ParsedUnit,
} from './types.js';

type Dict = Record<string, any>;
const isDict = (value: unknown): value is Dict => value !== null && typeof value === 'object' && !Array.isArray(value);
const own = (dict: Dict, name: string): unknown => (Object.hasOwn(dict, name) ? dict[name] : undefined);

/** What an export needs beyond the strings. */
interface StringMeta {
  comment?: string;
  extractionState?: string;
  substitutions?: Record<string, { argNum?: number; formatSpecifier?: string }>;
}

/** A stringUnit's text and state. */
function stringUnit(node: unknown, where: string): { value: string; state: string } {
  const unit = isDict(node) ? own(node, 'stringUnit') : undefined;
  if (!isDict(unit) || typeof own(unit, 'value') !== 'string') {
    throw new FormatError(`${where} has no stringUnit with a value`);
  }
  return { value: unit.value, state: typeof own(unit, 'state') === 'string' ? unit.state : 'translated' };
}

export function parseXcstrings(bytes: Buffer, options: ParseOptions): ParsedFile {
  const catalog = readJsonText(bytes, 'IOS_XCSTRINGS');
  if (!isDict(catalog) || typeof own(catalog, 'sourceLanguage') !== 'string' || !isDict(own(catalog, 'strings'))) {
    throw new FormatError('not a string catalog: it needs "sourceLanguage" and "strings"');
  }
  const sourceLanguage: string = catalog.sourceLanguage;
  const inSource = sameLanguage(sourceLanguage, options.locale);
  const units: ParsedUnit[] = [];
  const strings: Record<string, StringMeta> = Object.create(null);
  const languages = new Set<string>([sourceLanguage]);

  /** One string from a localization (or a variation of one): plain, or a plural. */
  const read = (node: unknown, path: string[], where: string) => {
    const plural = isDict(node) && isDict(node.variations) ? own(node.variations, 'plural') : undefined;
    if (!isDict(plural)) {
      const { value, state } = stringUnit(node, where);
      const untranslated = state === 'new' && !inSource;
      units.push({
        key: pathKey(path),
        context: null,
        source: value,
        sourcePlural: null,
        forms: [untranslated ? '' : value],
        fuzzy: state === 'needs_review',
        stale: state === 'stale',
      });
      return;
    }
    const named = new Map<string, string>();
    const states = new Set<string>();
    for (const [category, form] of Object.entries(plural)) {
      if (!isPluralCategory(category)) continue;
      const { value, state } = stringUnit(form, `${where} → plural ${category}`);
      states.add(state);
      named.set(category, state === 'new' && !inSource ? '' : value);
    }
    const text = readPlural(options.locale, named);
    const [fuzzy, stale] = [states.has('needs_review'), states.has('stale')];
    units.push({ key: pathKey(path), context: null, ...text, fuzzy, stale });
  };

  for (const [key, entry] of Object.entries(catalog.strings as Dict)) {
    if (!isDict(entry)) throw new FormatError(`the string "${key.slice(0, 60)}" is not an object`);
    // Xcode keeps an empty key ("") for a text it could not extract: nothing to translate.
    if (key === '' || own(entry, 'shouldTranslate') === false || own(entry, 'extractionState') === 'stale') continue;
    const where = `"${key.slice(0, 60)}"`;
    const localizations = isDict(own(entry, 'localizations')) ? (entry.localizations as Dict) : {};
    for (const code of Object.keys(localizations)) languages.add(code);
    const meta: StringMeta = {};
    if (typeof own(entry, 'comment') === 'string') meta.comment = entry.comment;
    if (typeof own(entry, 'extractionState') === 'string') meta.extractionState = entry.extractionState;
    strings[key] = meta;
    const code = pickLocale(Object.keys(localizations), options.locale);
    const localization = code === undefined ? undefined : localizations[code];
    if (!isDict(localization)) {
      // Xcode's source text is the key itself until someone gives it another.
      const text = inSource ? key : '';
      units.push({
        key: pathKey([key]),
        context: null,
        source: key,
        sourcePlural: null,
        forms: [text],
        fuzzy: false,
        stale: false,
      });
      continue;
    }
    const device = isDict(localization.variations) ? own(localization.variations, 'device') : undefined;
    if (isDict(device)) {
      for (const [name, variation] of Object.entries(device)) {
        read(variation, [key, 'device', name], `${where} → ${name}`);
      }
    } else {
      read(localization, [key], where);
    }
    const substitutions = own(localization, 'substitutions');
    if (isDict(substitutions)) {
      meta.substitutions = {};
      for (const [name, substitution] of Object.entries(substitutions)) {
        if (!isDict(substitution)) {
          throw new FormatError(`${where} → substitution ${name.slice(0, 60)} is not an object`);
        }
        const { argNum, formatSpecifier } = substitution;
        meta.substitutions[name] = {
          ...(typeof argNum === 'number' ? { argNum } : {}),
          ...(typeof formatSpecifier === 'string' ? { formatSpecifier } : {}),
        };
        read(substitution, [key, 'substitutions', name], `${where} → substitution ${name.slice(0, 60)}`);
      }
    }
  }
  const version = typeof own(catalog, 'version') === 'string' ? catalog.version : '1.0';
  return { units, meta: { sourceLanguage, version, languages: [...languages], strings } };
}

/** A localization (or variation) object: a stringUnit, or plural variations of them. */
function localized(request: ExportRequest, entry: ExportEntry, state: string): Dict | null {
  const unit = (value: string) => ({ stringUnit: { state, value } });
  if (!isPlural(request, entry)) {
    const value = exportedText(request, entry);
    return value === null ? null : unit(value);
  }
  const forms = namedForms(request, entry);
  if (!forms.length) return null;
  const plural: Dict = Object.create(null);
  for (const [category, text] of forms) plural[category] = unit(text);
  return { variations: { plural } };
}

/**
 * The whole catalog with the source language and the exported one: untranslated strings keep
 * their key, without a localization in that language, as Xcode shows them.
 */
export function writeXcstrings(request: ExportRequest): Buffer {
  const meta = request.meta;
  const languages = Array.isArray(meta.languages) ? meta.languages.map(String) : [];
  const named = (locale: string) => pickLocale(languages, locale) ?? new Intl.Locale(locale).minimize().toString();
  const sourceLanguage = typeof meta.sourceLanguage === 'string' ? meta.sourceLanguage : named(request.sourceLocale);
  const target = request.isBase ? null : named(request.locale);
  const known: Record<string, StringMeta> = isDict(meta.strings) ? meta.strings : {};
  const strings: Dict = Object.create(null);
  for (const entry of request.entries) {
    const [key, kind, name] = keyPath(entry.key).map(String);
    const extra: StringMeta = Object.hasOwn(known, key) ? known[key] : {};
    const string: Dict = (strings[key] ??= {
      ...(extra.comment === undefined ? {} : { comment: extra.comment }),
      ...(extra.extractionState === undefined ? {} : { extractionState: extra.extractionState }),
      localizations: Object.create(null),
    });
    const put = (language: string, value: Dict | null) => {
      if (!value) return;
      const localization: Dict = (string.localizations[language] ??= {});
      if (kind === 'device') {
        localization.variations ??= {};
        localization.variations.device ??= Object.create(null);
        localization.variations.device[name] = value;
      } else if (kind === 'substitutions') {
        const details =
          extra.substitutions && Object.hasOwn(extra.substitutions, name) ? extra.substitutions[name] : {};
        localization.substitutions ??= Object.create(null);
        localization.substitutions[name] = { ...details, ...value };
      } else {
        Object.assign(localization, value);
      }
    };
    put(sourceLanguage, localized({ ...request, isBase: true }, entry, 'translated'));
    if (target !== null && hasText(request, entry)) {
      put(target, localized(request, entry, entry.stale ? 'stale' : entry.fuzzy ? 'needs_review' : 'translated'));
    }
  }
  return Buffer.from(
    JSON.stringify({ sourceLanguage, strings, version: String(meta.version ?? '1.0') }, null, 2) + '\n',
  );
}
