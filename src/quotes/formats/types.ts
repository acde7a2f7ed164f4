// What every format parser produces and every writer consumes.

/** One translatable string of a file, as read from an upload. */
export interface ParsedUnit {
  /** Identity of the string within its file (PO: msgctxt + EOT + msgid; others: key path). */
  key: string;
  context: string | null;
  /** The text of the file's language: the source in a base upload, else ignored. */
  source: string;
  sourcePlural: string | null;
  /** Translation forms (one, or one per plural form); empty strings are missing forms. */
  forms: string[];
  /**
   * The format's own rule for "not translated" (PO: msgstr[0] is empty, as msgfmt counts);
   * without it, a unit with no form or an empty one is not translated.
   */
  untranslated?: boolean;
  /** The file marks the text as not approved (PO `#, fuzzy`, XLIFF needs-* states). */
  fuzzy: boolean;
  /** The file says the translation was made for another source text (PO `#| msgid`). */
  stale: boolean;
  /** PO: the raw `#|` comment, kept for export. */
  previous?: string | null;
  /** Phrase collections: the string's description for translators. */
  description?: string | null;
  /** Phrase collections: the length limit as JSON ({type, value, is_exceed_allowed}). */
  lengthLimit?: string | null;
}

/** What a reader knows about an upload besides its bytes. */
export interface ParseOptions {
  /**
   * The upload's locale, language-region (de-DE): the language a multilingual file (CSV,
   * .xcstrings) is read in, and whose CLDR plural categories name the forms of a plural.
   */
  locale: string;
}

export interface ParsedFile {
  units: ParsedUnit[];
  /** Format details the exporter needs to write the file back (e.g. YAML root key). */
  meta: Record<string, unknown>;
}

/** One string with its translation, as handed to a writer for export. */
export interface ExportEntry {
  key: string;
  context: string | null;
  source: string;
  sourcePlural: string | null;
  /** null when there is no translation for the exported locale. */
  forms: string[] | null;
  fuzzy: boolean;
  /** The translation was marked outdated by its upload (written back by formats that have the state: .xcstrings). */
  stale?: boolean;
  previous?: string | null;
  /** Phrase collections: kept from the upload and written back. */
  description?: string | null;
  lengthLimit?: string | null;
}

export interface ExportRequest {
  entries: ExportEntry[];
  meta: Record<string, unknown>;
  /** The exported locale, language-region (ja-JP). */
  locale: string;
  sourceLocale: string;
  fileName: string;
  /** True when the exported locale is the base language (write the source texts). */
  isBase: boolean;
  /** PO: the Plural-Forms header of the exported language's last upload. */
  pluralForms?: string | null;
}

/** A string of one form with no state of its own (key-value formats). */
export function textUnit(key: string, text: string, state: { fuzzy?: boolean; stale?: boolean } = {}): ParsedUnit {
  return {
    key,
    context: null,
    source: text,
    sourcePlural: null,
    forms: [text],
    fuzzy: state.fuzzy ?? false,
    stale: state.stale ?? false,
  };
}

/**
 * The text an export writes for a one-form string: the source in the base language (an empty
 * one included), else the translation; null when there is none.
 */
export function exportedText(request: ExportRequest, entry: ExportEntry): string | null {
  return request.isBase ? entry.source : entry.forms?.[0] || null;
}

/** Whether an export has any text of its own for the entry (a plural may have some of its forms). */
export function hasText(request: ExportRequest, entry: ExportEntry): boolean {
  return request.isBase ? entry.source !== '' : (entry.forms?.some((form) => form !== '') ?? false);
}

/** A problem with the uploaded file, reported as the import's failure message. */
export class FormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FormatError';
  }
}
