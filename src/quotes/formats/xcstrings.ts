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
import { field as own, isRecord } from '../../json-fields.js';

type Dict = Record<string, unknown>;
const isDict = (value: unknown): value is Dict => isRecord(value) && !Array.isArray(value);

/** What an export needs beyond the strings. */
interface StringMeta {
  comment?: string;
  extractionState?: string;
  substitutions?: Record<string, { argNum?: number; formatSpecifier?: string }>;
}

/** A stringUnit's text and state. */
function stringUnit(node: unknown, where: string): { value: string; state: string } {
  const unit = isDict(node) ? own(node, 'stringUnit') : undefined;
  const [value, state] = isDict(unit) ? [own(unit, 'value'), own(unit, 'state')] : [];
  if (typeof value !== 'string') throw new FormatError(`${where} has no stringUnit with a value`);
  return { value, state: typeof state === 'string' ? state : 'translated' };
}

export function parseXcstrings(bytes: Buffer, options: ParseOptions): ParsedFile {
  const catalog = readJsonText(bytes, 'IOS_XCSTRINGS');
  const sourceLanguage = own(catalog, 'sourceLanguage');
  const catalogStrings = own(catalog, 'strings');
  if (!isDict(catalog) || typeof sourceLanguage !== 'string' || !isDict(catalogStrings)) {
    throw new FormatError('not a string catalog: it needs "sourceLanguage" and "strings"');
  }
  const inSource = sameLanguage(sourceLanguage, options.locale);
  const units: ParsedUnit[] = [];
  const strings: Record<string, StringMeta> = Object.create(null);
  const languages = new Set<string>([sourceLanguage]);

  /** One string from a localization (or a variation of one): plain, or a plural. */
  const read = (node: unknown, path: string[], where: string) => {
    const variations = own(node, 'variations');
    const plural = isDict(node) && isDict(variations) ? own(variations, 'plural') : undefined;
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

  for (const [key, entry] of Object.entries(catalogStrings)) {
    if (!isDict(entry)) throw new FormatError(`the string "${key.slice(0, 60)}" is not an object`);
    // Xcode keeps an empty key ("") for a text it could not extract: nothing to translate.
    if (key === '' || own(entry, 'shouldTranslate') === false || own(entry, 'extractionState') === 'stale') continue;
    const where = `"${key.slice(0, 60)}"`;
    const localizationsField = own(entry, 'localizations');
    const localizations = isDict(localizationsField) ? localizationsField : {};
    for (const code of Object.keys(localizations)) languages.add(code);
    const meta: StringMeta = {};
    const [comment, extractionState] = [own(entry, 'comment'), own(entry, 'extractionState')];
    if (typeof comment === 'string') meta.comment = comment;
    if (typeof extractionState === 'string') meta.extractionState = extractionState;
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
    const variations = own(localization, 'variations');
    const device = isDict(variations) ? own(variations, 'device') : undefined;
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
        const [argNum, formatSpecifier] = [own(substitution, 'argNum'), own(substitution, 'formatSpecifier')];
        meta.substitutions[name] = {
          ...(typeof argNum === 'number' ? { argNum } : {}),
          ...(typeof formatSpecifier === 'string' ? { formatSpecifier } : {}),
        };
        read(substitution, [key, 'substitutions', name], `${where} → substitution ${name.slice(0, 60)}`);
      }
    }
  }
  const catalogVersion = own(catalog, 'version');
  const version = typeof catalogVersion === 'string' ? catalogVersion : '1.0';
  return { units, meta: { sourceLanguage, version, languages: [...languages], strings } };
}

type Unit = { stringUnit: { state: string; value: string } };
/** A localization (or variation) object as written: a stringUnit, or plural variations of them. */
type Localized = Unit | { variations: { plural: Record<string, Unit> } };
/** A localization of a string as written: itself, or its device variations, and its substitutions. */
type Localization = Partial<Unit> & {
  variations?: { plural?: Record<string, Unit>; device?: Record<string, Localized> };
  substitutions?: Record<string, Localized & { argNum?: number; formatSpecifier?: string }>;
};
type CatalogString = { comment?: string; extractionState?: string; localizations: Record<string, Localization> };

/** A localization (or variation) object: a stringUnit, or plural variations of them. */
function localized(request: ExportRequest, entry: ExportEntry, state: string): Localized | null {
  const unit = (value: string): Unit => ({ stringUnit: { state, value } });
  if (!isPlural(request, entry)) {
    const value = exportedText(request, entry);
    return value === null ? null : unit(value);
  }
  const forms = namedForms(request, entry);
  if (!forms.length) return null;
  const plural: Record<string, Unit> = Object.create(null);
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
  // What parseXcstrings kept of each string, stored with the file.
  const known = isDict(meta.strings) ? (meta.strings as Record<string, StringMeta>) : {};
  const strings: Record<string, CatalogString> = Object.create(null);
  for (const entry of request.entries) {
    const [key, kind, name] = keyPath(entry.key).map(String);
    const extra: StringMeta = Object.hasOwn(known, key) ? known[key] : {};
    const string = (strings[key] ??= {
      ...(extra.comment === undefined ? {} : { comment: extra.comment }),
      ...(extra.extractionState === undefined ? {} : { extractionState: extra.extractionState }),
      localizations: Object.create(null),
    });
    const put = (language: string, value: Localized | null) => {
      if (!value) return;
      const localization = (string.localizations[language] ??= {});
      if (kind === 'device') {
        const variations = (localization.variations ??= {});
        const devices: Record<string, Localized> = (variations.device ??= Object.create(null));
        devices[name] = value;
      } else if (kind === 'substitutions') {
        const details =
          extra.substitutions && Object.hasOwn(extra.substitutions, name) ? extra.substitutions[name] : {};
        const substitutions: NonNullable<Localization['substitutions']> = (localization.substitutions ??=
          Object.create(null));
        substitutions[name] = { ...details, ...value };
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
