// One import: the uploaded bytes, read in their format with their word counts by the import pool
// (file-worker.ts), are applied in ONE transaction (strings or translations, file totals, state
// counts, the task's status), so a file is either fully imported or not at all.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Dialect } from '../db/index.js';
import type { DB } from '../db/schema.js';
import { insertRows, updateRows, type Column } from '../db/bulk.js';
import { ReadError, type CountedUnit, type ReadFile } from './file-worker.js';
import {
  addTargetLocales,
  chunks,
  countedLocales,
  dropPayloads,
  findFile,
  recountFileLocale,
  type ImportRow,
} from './store.js';

/** Failures whose message is meant for the uploader (anything else is logged, not shown). */
export class ImportError extends Error {}

export interface ImportOutcome {
  strings: number;
  words: number;
}

/** A file name must be a plain name: no directories, no control characters. */
export function fileNameProblem(name: string): string | null {
  if (!name || !name.trim()) return 'the file has no name';
  if (name.length > 255) return 'the file name is longer than 255 characters';
  if (/[\\/]/.test(name) || name === '.' || name === '..') {
    return `the file name "${name.slice(0, 80)}" contains a path; upload a plain file name`;
  }
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'the file name contains control characters';
  return null;
}

// Columns of the bulk writes (rows are arrays in this order).
const STRING_COLUMNS: Column[] = [
  { name: 'file_id', type: 'bigint' },
  { name: 'key', type: 'text' },
  { name: 'context', type: 'text' },
  { name: 'source', type: 'text' },
  { name: 'source_plural', type: 'text' },
  { name: 'word_count', type: 'integer' },
  { name: 'position', type: 'integer' },
  { name: 'source_changed_at', type: 'bigint' },
];
const ID: Column[] = [{ name: 'id', type: 'bigint' }];
const CHANGED_SOURCE = STRING_COLUMNS.slice(3); // source … source_changed_at
const POSITION: Column[] = [{ name: 'position', type: 'integer' }];
const TRANSLATION_KEY: Column[] = [
  { name: 'string_id', type: 'bigint' },
  { name: 'locale', type: 'text' },
];
const TRANSLATION_VALUES: Column[] = [
  { name: 'forms', type: 'text' },
  { name: 'is_empty', type: 'integer' },
  { name: 'fuzzy', type: 'integer' },
  { name: 'stale', type: 'integer' },
  { name: 'previous', type: 'text' },
  { name: 'translated_at', type: 'bigint' },
];

// SQLite runs on this thread: a big import's writes go in slices of SLICE rows with a turn of the
// event loop between them, so other requests are answered meanwhile (only the database waits).
const SLICE = 5000;
type Trx = Transaction<DB>;

async function inSlices(values: unknown[], width: number, write: (rows: unknown[]) => Promise<unknown>) {
  for (let i = 0; i < values.length; i += SLICE * width) {
    if (i) await new Promise((resolve) => setImmediate(resolve));
    await write(values.slice(i, i + SLICE * width));
  }
}

function insertSliced(trx: Trx, dialect: Dialect, table: string, columns: Column[], values: unknown[]) {
  return inSlices(values, columns.length, (rows) => insertRows(trx, dialect, table, columns, rows));
}

function updateSliced(trx: Trx, dialect: Dialect, table: string, keys: Column[], set: Column[], values: unknown[]) {
  return inSlices(values, keys.length + set.length, (rows) => updateRows(trx, dialect, table, keys, set, rows));
}

/** Applies a file read by the import pool (file-worker.ts, with its word counts). */
export async function applyImport(
  db: Kysely<DB>,
  dialect: Dialect,
  job: ImportRow,
  parsed: ReadFile,
  now: () => number,
): Promise<ImportOutcome> {
  return db.transaction().execute(async (trx) => {
    const project = await trx
      .selectFrom('quote_projects')
      .select(['id', 'base_locale'])
      .where('id', '=', job.project_id)
      .executeTakeFirst();
    if (!project) throw new ImportError('the project was deleted');
    const at = now();
    const outcome =
      job.locale === project.base_locale
        ? await importSource(trx, dialect, job, parsed.units, parsed.meta, at)
        : await importTranslations(trx, dialect, job, parsed.units, parsed.meta, at);
    await trx
      .updateTable('quote_imports')
      .set({
        status: 'completed',
        message: null,
        string_count: outcome.strings,
        word_count: outcome.words,
        finished_at: at,
      })
      .where('id', '=', job.id)
      .execute();
    await dropPayloads(trx, [job.id]);
    return outcome;
  });
}

async function importSource(
  trx: Trx,
  dialect: Dialect,
  job: ImportRow,
  units: CountedUnit[],
  meta: Record<string, unknown>,
  at: number,
): Promise<ImportOutcome> {
  let file = await findFile(trx, job.project_id, job.file_name);
  if (!file) {
    const inserted = await trx
      .insertInto('quote_files')
      .values({
        project_id: job.project_id,
        name: job.file_name,
        format: job.format,
        string_count: 0,
        word_count: 0,
        meta: '{}',
        uploaded_at: at,
        last_import_id: job.id,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    file = {
      id: Number(inserted.id),
      project_id: job.project_id,
      name: job.file_name,
      format: job.format,
      string_count: 0,
      word_count: 0,
      meta: '{}',
      uploaded_at: at,
      last_import_id: job.id,
    };
  }
  const fileId = file.id;
  const existing = new Map<string, { id: number; source: string; source_plural: string | null; position: number }>();
  for (const row of await trx
    .selectFrom('quote_strings')
    .select(['id', 'key', 'source', 'source_plural', 'position'])
    .where('file_id', '=', fileId)
    .execute()) {
    existing.set(row.key, {
      id: Number(row.id),
      source: row.source,
      source_plural: row.source_plural,
      position: row.position,
    });
  }
  // Rows for the bulk writes, their values one after another (bulk.ts).
  const inserts: unknown[] = [];
  // Changed source texts restart the "outdated" clock; unchanged ones keep theirs.
  const changed: unknown[] = [];
  const moved: unknown[] = [];
  let words = 0;
  const seen = new Set<string>();
  units.forEach((unit, position) => {
    if (seen.has(unit.key)) throw new ImportError(`duplicate string "${unit.source.slice(0, 60)}"`);
    seen.add(unit.key);
    const count = unit.words;
    words += count;
    const old = existing.get(unit.key);
    if (!old) {
      inserts.push(fileId, unit.key, unit.context, unit.source, unit.sourcePlural, count, position, at);
    } else if (old.source !== unit.source || old.source_plural !== unit.sourcePlural) {
      changed.push(old.id, unit.source, unit.sourcePlural, count, position, at);
    } else if (old.position !== position) {
      moved.push(old.id, position);
    }
  });
  await insertSliced(trx, dialect, 'quote_strings', STRING_COLUMNS, inserts);
  await updateSliced(trx, dialect, 'quote_strings', ID, CHANGED_SOURCE, changed);
  await updateSliced(trx, dialect, 'quote_strings', ID, POSITION, moved);
  if (job.keep_all_strings === 0) {
    const gone = [...existing.entries()].filter(([key]) => !seen.has(key)).map(([, row]) => row.id);
    for (const batch of chunks(gone)) await trx.deleteFrom('quote_strings').where('id', 'in', batch).execute();
  }
  const totals = await trx
    .selectFrom('quote_strings')
    .select([trx.fn.countAll<number>().as('strings'), sql<number>`coalesce(sum(word_count), 0)`.as('words')])
    .where('file_id', '=', fileId)
    .executeTakeFirstOrThrow();
  await trx
    .updateTable('quote_files')
    .set({
      format: job.format,
      meta: JSON.stringify(meta),
      string_count: Number(totals.strings),
      word_count: Number(totals.words),
      uploaded_at: at,
      last_import_id: job.id,
    })
    .where('id', '=', fileId)
    .execute();
  for (const locale of await countedLocales(trx, fileId)) await recountFileLocale(trx, fileId, locale);
  return { strings: units.length, words };
}

function sameAsSource(forms: string[], source: string, plural: string | null): boolean {
  return forms[0] === source && (forms.length < 2 || forms.slice(1).every((form) => form === (plural ?? source)));
}

async function importTranslations(
  trx: Trx,
  dialect: Dialect,
  job: ImportRow,
  units: CountedUnit[],
  meta: Record<string, unknown>,
  at: number,
): Promise<ImportOutcome> {
  const file = await findFile(trx, job.project_id, job.file_name);
  if (!file) {
    throw new ImportError(
      `upload "${job.file_name}" in the base language first: a translation needs its source strings`,
    );
  }
  await addTargetLocales(trx, job.project_id, [job.locale], at);
  const strings = new Map<string, { id: number; source: string; source_plural: string | null; word_count: number }>();
  for (const row of await trx
    .selectFrom('quote_strings')
    .select(['id', 'key', 'source', 'source_plural', 'word_count'])
    .where('file_id', '=', file.id)
    .execute()) {
    strings.set(row.key, {
      id: Number(row.id),
      source: row.source,
      source_plural: row.source_plural,
      word_count: row.word_count,
    });
  }
  const current = new Map<number, { forms: string; fuzzy: number; stale: number; previous: string | null }>();
  const rows = await trx
    .selectFrom('quote_translations as t')
    .innerJoin('quote_strings as s', 's.id', 't.string_id')
    .select(['t.string_id', 't.forms', 't.fuzzy', 't.stale', 't.previous'])
    .where('s.file_id', '=', file.id)
    .where('t.locale', '=', job.locale)
    .execute();
  for (const row of rows) {
    current.set(Number(row.string_id), {
      forms: row.forms,
      fuzzy: row.fuzzy,
      stale: row.stale,
      previous: row.previous,
    });
  }

  let known = 0;
  let matched = 0;
  let words = 0;
  const inserts: unknown[] = [];
  const updates: unknown[] = [];
  for (const unit of units) {
    const target = strings.get(unit.key);
    if (!target) continue; // not in the base file: nothing to translate
    known++;
    // A "translation" identical to the source is no translation unless the upload allows it.
    if (job.allow_same_as_original === 0 && sameAsSource(unit.forms, target.source, target.source_plural)) continue;
    matched++;
    words += target.word_count;
    const forms = JSON.stringify(unit.forms.length ? unit.forms : ['']);
    const isEmpty = unit.forms.length === 0 || unit.forms.some((form) => form === '') ? 1 : 0;
    const fuzzy = unit.fuzzy ? 1 : 0;
    const stale = unit.stale ? 1 : 0;
    const previous = unit.previous ?? null;
    const old = current.get(target.id);
    // Only a change is a new translation: re-uploading the same file does not refresh it.
    const rows = !old
      ? inserts
      : old.forms !== forms || old.fuzzy !== fuzzy || old.stale !== stale || old.previous !== previous
        ? updates
        : null;
    rows?.push(target.id, job.locale, forms, isEmpty, fuzzy, stale, previous, at);
  }
  if (known === 0) {
    throw new ImportError(
      `none of the ${units.length} strings matches a string of "${file.name}" in the base language`,
    );
  }
  await insertSliced(trx, dialect, 'quote_translations', [...TRANSLATION_KEY, ...TRANSLATION_VALUES], inserts);
  await updateSliced(trx, dialect, 'quote_translations', TRANSLATION_KEY, TRANSLATION_VALUES, updates);
  await recountFileLocale(trx, file.id, job.locale);
  const pluralForms = (meta.headers as Record<string, string> | undefined)?.['Plural-Forms'];
  if (pluralForms) {
    await trx
      .updateTable('quote_file_locales')
      .set({ plural_forms: pluralForms })
      .where('file_id', '=', file.id)
      .where('locale', '=', job.locale)
      .execute();
  }
  return { strings: matched, words };
}

/** The uploader-facing message of a failed import. */
export function failureMessage(error: unknown): string | null {
  if (error instanceof ImportError || error instanceof ReadError) return error.message;
  return null;
}
