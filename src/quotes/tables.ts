// Row types of this service's tables (kept in step with migrations.ts).
// Times are Unix milliseconds, booleans 0/1 (src/db/columns.ts conventions).
import type { Generated } from 'kysely';

export interface QuoteProjectRow {
  id: Generated<number>;
  owner_id: string;
  name: string;
  description: string;
  base_locale: string;
  created_at: number;
  updated_at: number;
  /** The project group it belongs to (OneSky's projects live in groups); null for a project made without one. */
  project_group_id: number | null;
  /** A code of project-types.ts; null for a project made without one. */
  project_type: string | null;
}

/** A project group: a base language and projects that share it. */
export interface QuoteProjectGroupRow {
  id: Generated<number>;
  owner_id: string;
  name: string;
  base_locale: string;
  created_at: number;
}

/** The target languages of a project. */
export interface QuoteProjectLanguageRow {
  project_id: number;
  locale: string;
  created_at: number;
}

export interface QuoteFileRow {
  id: Generated<number>;
  project_id: number;
  name: string;
  format: string;
  string_count: number;
  word_count: number;
  /** JSON: what the exporter needs to write the format back. */
  meta: string;
  uploaded_at: number;
  last_import_id: number | null;
  /** When the file (or phrase collection) was first uploaded. */
  created_at: number;
}

export interface QuoteStringRow {
  id: Generated<number>;
  file_id: number;
  key: string;
  context: string | null;
  source: string;
  source_plural: string | null;
  word_count: number;
  position: number;
  /** When the current source text first appeared (the "outdated" clock). */
  source_changed_at: number;
  /** Phrase collections: the string's description for translators. */
  description: string | null;
  /** Phrase collections: JSON {type: absolute|relative, value, is_exceed_allowed}. */
  length_limit: string | null;
}

export interface QuoteTranslationRow {
  string_id: number;
  locale: string;
  /** JSON array of the translation forms (one, or one per plural form). */
  forms: string;
  /** 1 when a form is missing: the string counts as not translated. */
  is_empty: number;
  fuzzy: number;
  /** 1 when the file said the translation was made for another source text (PO `#|`). */
  stale: number;
  /** PO: the raw `#|` comment (previous msgctxt/msgid), written back on export. */
  previous: string | null;
  translated_at: number;
}

/** Precomputed phrase-state counts of one file in one target language, plus its order baseline. */
export interface QuoteFileLocaleRow {
  file_id: number;
  locale: string;
  not_translated_strings: number;
  not_translated_words: number;
  not_approved_strings: number;
  not_approved_words: number;
  outdated_strings: number;
  outdated_words: number;
  approved_strings: number;
  approved_words: number;
  /** Latest translation change in this language, null when none. */
  translated_at: number | null;
  /** The last order of this file into this language: the "outdated" baseline. */
  ordered_at: number | null;
  /** PO: the Plural-Forms header of the last upload in this language. */
  plural_forms: string | null;
}

export interface QuoteImportRow {
  id: Generated<number>;
  project_id: number;
  file_name: string;
  format: string;
  locale: string;
  keep_all_strings: number;
  allow_same_as_original: number;
  /** queued | running | completed | failed */
  status: string;
  message: string | null;
  byte_count: number;
  string_count: number | null;
  word_count: number | null;
  attempts: number;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  /** While running: until when its process holds it (renewed as it works; jobs/import-queue.ts). */
  lease_until: number | null;
}

/** An uploaded file, kept until its import ends (apart: a status change then leaves it alone). */
export interface QuoteImportPayloadRow {
  import_id: number;
  payload: Buffer;
}

export interface QuoteOrderRow {
  id: Generated<number>;
  project_id: number;
  owner_id: string;
  from_locale: string;
  to_locale: string;
  /** JSON array of file names. */
  files: string;
  order_type: string;
  translator_type: string;
  tone: string;
  specialization: string;
  note: string;
  include_not_translated: number;
  include_not_approved: number;
  include_outdated: number;
  string_count: number;
  word_count: number;
  amount: string;
  per_word_cost: string;
  ordered_at: number;
}

/** One translator's share of an order: translation or review work in one language. */
export interface QuoteAssignmentRow {
  id: Generated<number>;
  order_id: number;
  project_id: number;
  locale: string;
  translator: string;
  /** translate | review */
  role: string;
  word_count: number;
  starts_at: number;
  busy_until: number;
}

/** A screenshot of a project: a raster image identified by its name in the project. */
export interface QuoteScreenshotRow {
  id: Generated<number>;
  project_id: number;
  name: string;
  /** The image's type, recognized from its bytes (image/png …). */
  mime: string;
  image: Buffer;
  byte_count: number;
  created_at: number;
  updated_at: number;
}

/** A string shown on a screenshot, and where (pixels). */
export interface QuoteScreenshotTagRow {
  screenshot_id: number;
  position: number;
  key: string;
  /** The file the key belongs to, when the uploader named one. */
  file_name: string | null;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** A file attached to a phrase collection (a file of format PHRASE_COLLECTION), by its name in it. */
export interface QuoteCollectionAttachmentRow {
  id: Generated<number>;
  file_id: number;
  name: string;
  content: Buffer;
  byte_count: number;
  uploaded_at: number;
}

export interface QuotesTables {
  quote_project_groups: QuoteProjectGroupRow;
  quote_projects: QuoteProjectRow;
  quote_project_languages: QuoteProjectLanguageRow;
  quote_files: QuoteFileRow;
  quote_strings: QuoteStringRow;
  quote_translations: QuoteTranslationRow;
  quote_file_locales: QuoteFileLocaleRow;
  quote_imports: QuoteImportRow;
  quote_import_payloads: QuoteImportPayloadRow;
  quote_orders: QuoteOrderRow;
  quote_assignments: QuoteAssignmentRow;
  quote_screenshots: QuoteScreenshotRow;
  quote_screenshot_tags: QuoteScreenshotTagRow;
  quote_collection_attachments: QuoteCollectionAttachmentRow;
}
