// One import: the uploaded bytes, read in their format with their word counts by the import pool
// (file-worker.ts), are applied in ONE transaction (strings or translations, file totals, state
// counts, the task's status), so a file is either fully imported or not at all. The units are
// written batch by batch as the pool counts them; a problem found in a later batch (a duplicate)
// rolls the earlier ones back with the rest.
import { writeTransaction, type Database, type Dialect, type Executor } from '../../db/index.js';
import { ReadError, type CountedUnit, type ReadFile } from './file-worker.js';
import {
  countedLocales,
  findFile,
  insertFile,
  recountFileLocale,
  setPluralForms,
  updateUploadedFile,
} from '../store/files.js';
import { baseLocaleOf, completeImport } from '../store/imports.js';
import { addTargetLocales } from '../store/projects.js';
import { COLLECTION_FORMAT, type ImportRow } from '../store/rows.js';
import {
  copyNewStrings,
  deleteStrings,
  importWrites,
  mergeStrings,
  stringsByKey,
  translationsOf,
} from '../store/strings.js';

const isCollection = (format: string) => format === COLLECTION_FORMAT;

/** Failures whose message is meant for the uploader (anything else is logged, not shown). */
export class ImportError extends Error {}

/**
 * This try of the import no longer holds it: its lease ran out (the database was away longer than
 * QUOTES_IMPORT_STALE_S) and another try took it over; what it wrote is rolled back.
 */
export class ImportLeaseLost extends Error {
  constructor(id: number) {
    super(`import ${id}: its lease ran out and another try took it over`);
  }
}

export interface ImportOutcome {
  strings: number;
  words: number;
}

/** An import being applied: the job, its file as the pool reads it, in its transaction. */
interface Applying {
  trx: Executor;
  dialect: Dialect;
  job: ImportRow;
  read: ReadFile;
  at: number;
}

/** Applies a file read by the import pool (file-worker.ts, with its word counts). */
export async function applyImport(
  db: Database,
  job: ImportRow,
  read: ReadFile,
  now: () => number,
): Promise<ImportOutcome> {
  // Read then write: SQLite's write lock is taken at the start (writeTransaction).
  return writeTransaction(db, async (trx) => {
    const baseLocale = await baseLocaleOf(trx, job.project_id);
    if (baseLocale === undefined) throw new ImportError('the project was deleted');
    const at = now();
    const applying: Applying = { trx, dialect: db.dialect, job, read, at };
    const outcome = job.locale === baseLocale ? await importSource(applying) : await importTranslations(applying);
    if (!(await completeImport(trx, job, outcome, at))) throw new ImportLeaseLost(job.id);
    return outcome;
  });
}

async function importSource({ trx, dialect, job, read, at }: Applying): Promise<ImportOutcome> {
  const found = await findFile(trx, job.project_id, job.file_name);
  // A phrase collection and a file share the project's names, not their strings.
  if (found && isCollection(found.format) !== isCollection(job.format)) {
    const what = isCollection(found.format) ? 'a phrase collection' : 'a file';
    throw new ImportError(`${what} named "${job.file_name.slice(0, 100)}" exists in the project; use another name`);
  }
  const file =
    found ??
    (await insertFile(trx, {
      project_id: job.project_id,
      name: job.file_name,
      format: job.format,
      string_count: 0,
      word_count: 0,
      meta: '{}',
      uploaded_at: at,
      last_import_id: job.id,
      created_at: at,
    }));
  const outcome: ImportOutcome = { strings: 0, words: 0 };
  const keys = new Set<string>();
  // The file's units in order, refused at the first duplicate or NUL character.
  async function* checked(): AsyncGenerator<CountedUnit[]> {
    for await (const batch of read.batches) {
      for (const unit of batch) {
        if (keys.has(unit.key)) throw new ImportError(`duplicate string "${unit.source.slice(0, 60)}"`);
        keys.add(unit.key);
        refuseNul(unit.key, unit.context, unit.source, unit.sourcePlural);
        outcome.words += unit.words;
      }
      outcome.strings += batch.length;
      yield batch;
    }
  }
  const deleteMissing = job.keep_all_strings === 0;
  // PostgreSQL copies a new file's strings straight in, and merges a known file set-wise from a
  // COPY; SQLite, on this thread, diffs row by row.
  if (dialect === 'sqlite') await diffStrings(trx, file.id, checked(), keys, at, deleteMissing);
  else if (found) await mergeStrings(trx, file.id, checked(), at, deleteMissing);
  else await copyNewStrings(trx, file.id, checked(), at);
  await updateUploadedFile(trx, file.id, {
    format: job.format,
    meta: JSON.stringify(read.meta),
    uploaded_at: at,
    last_import_id: job.id,
  });
  for (const locale of await countedLocales(trx, file.id)) await recountFileLocale(trx, file.id, locale);
  return outcome;
}

/**
 * PostgreSQL's text cannot hold a NUL character (COPY and parameters alike): a string with one
 * fails the import on either database, with the same message.
 */
function refuseNul(...texts: (string | null | undefined)[]): void {
  const text = texts.find((t) => t?.includes('\0'));
  if (text == null) return;
  throw new ImportError(`the string "${text.slice(0, 60).replace(/\0/g, '\\0')}" contains a NUL character`);
}

/** SQLite: the file's strings compared with the stored ones, written with importWrites batch by batch. */
async function diffStrings(
  trx: Executor,
  fileId: number,
  batches: AsyncIterable<CountedUnit[]>,
  keys: Set<string>,
  at: number,
  deleteMissing: boolean,
): Promise<void> {
  const existing = await stringsByKey(trx, fileId);
  let position = 0;
  for await (const batch of batches) {
    // Rows for the bulk writes, their values one after another (store/strings.ts importWrites).
    const inserts: unknown[] = [];
    // Changed source texts restart the "outdated" clock; unchanged ones keep theirs.
    const changed: unknown[] = [];
    const moved: unknown[] = [];
    // A phrase collection's description and length limit follow the upload without restarting the clock.
    const notes: unknown[] = [];
    for (const unit of batch) {
      const old = existing.get(unit.key);
      const description = unit.description ?? null;
      const lengthLimit = unit.lengthLimit ?? null;
      if (!old) {
        const { key, context, source, sourcePlural, words } = unit;
        inserts.push(fileId, key, context, source, sourcePlural, words, position, at, description, lengthLimit);
      } else if (old.source !== unit.source || old.source_plural !== unit.sourcePlural) {
        changed.push(old.id, unit.source, unit.sourcePlural, unit.words, position, at, description, lengthLimit);
      } else {
        if (old.position !== position) moved.push(old.id, position);
        if (old.description !== description || old.length_limit !== lengthLimit) {
          notes.push(old.id, description, lengthLimit);
        }
      }
      position++;
    }
    await importWrites.strings(trx, 'sqlite', inserts);
    await importWrites.changedSources(trx, 'sqlite', changed);
    await importWrites.moves(trx, 'sqlite', moved);
    await importWrites.changedNotes(trx, 'sqlite', notes);
  }
  if (deleteMissing) {
    await deleteStrings(
      trx,
      [...existing.values()].filter((row) => !keys.has(row.key)).map((row) => row.id),
    );
  }
}

function sameAsSource(forms: string[], source: string, plural: string | null): boolean {
  return forms[0] === source && (forms.length < 2 || forms.slice(1).every((form) => form === (plural ?? source)));
}

async function importTranslations({ trx, dialect, job, read, at }: Applying): Promise<ImportOutcome> {
  const file = await findFile(trx, job.project_id, job.file_name);
  if (!file) {
    throw new ImportError(
      `upload "${job.file_name}" in the base language first: a translation needs its source strings`,
    );
  }
  await addTargetLocales(trx, job.project_id, [job.locale], at);
  const strings = await stringsByKey(trx, file.id);
  const current = await translationsOf(trx, file.id, job.locale);
  let units = 0;
  let known = 0;
  let matched = 0;
  let words = 0;
  for await (const batch of read.batches) {
    units += batch.length;
    const inserts: unknown[] = [];
    const updates: unknown[] = [];
    for (const unit of batch) {
      const target = strings.get(unit.key);
      if (!target) continue; // not in the base file: nothing to translate
      known++;
      refuseNul(...unit.forms, unit.previous);
      // A "translation" identical to the source is no translation unless the upload allows it.
      if (job.allow_same_as_original === 0 && sameAsSource(unit.forms, target.source, target.source_plural)) continue;
      matched++;
      words += target.word_count;
      const forms = JSON.stringify(unit.forms.length ? unit.forms : ['']);
      const isEmpty =
        (unit.untranslated ?? (unit.forms.length === 0 || unit.forms.some((form) => form === ''))) ? 1 : 0;
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
    await importWrites.newTranslations(trx, dialect, inserts);
    await importWrites.changedTranslations(trx, dialect, updates);
  }
  if (known === 0) {
    throw new ImportError(`none of the ${units} strings matches a string of "${file.name}" in the base language`);
  }
  await recountFileLocale(trx, file.id, job.locale);
  const pluralForms = (read.meta.headers as Record<string, string> | undefined)?.['Plural-Forms'];
  if (pluralForms) await setPluralForms(trx, file.id, job.locale, pluralForms);
  return { strings: matched, words };
}

/** The uploader-facing message of a failed import. */
export function failureMessage(error: unknown): string | null {
  if (error instanceof ImportError || error instanceof ReadError) return error.message;
  return null;
}
