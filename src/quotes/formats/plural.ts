// Plurals of the formats that name their forms by CLDR category (zero, one, two, few, many,
// other): .stringsdict, .xcstrings, Rails YAML. A plural is stored the way a PO plural is: its
// forms in a fixed order, here the CLDR categories of the file's language (Intl.PluralRules), so
// an export can name them again; its source is the `one` form, with `other` as the plural.
import type { ExportEntry, ExportRequest } from './types.js';

const ORDER = ['zero', 'one', 'two', 'few', 'many', 'other'] as const;
const CATEGORIES = new Set<string>(ORDER);

export const isPluralCategory = (name: string): boolean => CATEGORIES.has(name);

// Per locale: building Intl.PluralRules for each string of a big file cost more than reading it.
const byLocale = new Map<string, string[]>();

/** The CLDR plural categories of a language, in CLDR's order. */
export function pluralCategories(locale: string): string[] {
  let known = byLocale.get(locale);
  if (!known) {
    let categories: string[];
    try {
      categories = new Intl.PluralRules(locale).resolvedOptions().pluralCategories;
    } catch {
      categories = ['one', 'other'];
    }
    known = ORDER.filter((category) => categories.includes(category));
    // Locales come from the service's list; the bound only guards against a caller's loop.
    if (byLocale.size < 1000) byLocale.set(locale, known);
  }
  return known;
}

/** Apple and Rails accept an explicit `zero` in every language: it comes first where CLDR has none. */
function layout(locale: string, withZero: boolean): string[] {
  const categories = pluralCategories(locale);
  return withZero && !categories.includes('zero') ? ['zero', ...categories] : categories;
}

export interface PluralText {
  forms: string[];
  source: string;
  sourcePlural: string | null;
}

/**
 * A plural read from a file in `locale`, by category. A category the language does not have
 * (`few` in English) is left out; a missing one is an empty form, i.e. not translated.
 */
export function readPlural(locale: string, named: Map<string, string>): PluralText {
  const forms = layout(locale, named.has('zero')).map((category) => named.get(category) ?? '');
  const one = named.get('one');
  const other = named.get('other') ?? '';
  return { forms, source: one ?? other, sourcePlural: one === undefined ? null : other };
}

/**
 * The forms of a translated plural, or null when it lacks its `other` form: Apple and Rails need
 * it, and a plural without it is not translated (it is exported as untranslated strings are).
 */
export function completeForms(request: ExportRequest, entry: ExportEntry): [string, string][] | null {
  const forms = namedForms(request, entry);
  return forms.some(([category]) => category === 'other') ? forms : null;
}

/** Whether an export writes the entry as a plural (a single form is a plain string). */
export function isPlural(request: ExportRequest, entry: ExportEntry): boolean {
  return request.isBase ? entry.sourcePlural !== null : (entry.forms?.length ?? 0) > 1;
}

/** The forms an export writes, by category: the source's one and other, or the translation's non-empty ones. */
export function namedForms(request: ExportRequest, entry: ExportEntry): [string, string][] {
  if (request.isBase) {
    return entry.sourcePlural === null
      ? [['other', entry.source]]
      : [
          ['one', entry.source],
          ['other', entry.sourcePlural],
        ];
  }
  const forms = entry.forms ?? [];
  const order =
    forms.length === 1 ? ['other'] : layout(request.locale, forms.length > pluralCategories(request.locale).length);
  return order.flatMap((category, index): [string, string][] => (forms[index] ? [[category, forms[index]]] : []));
}
