// All SQL of the quotation service (Kysely, parameterized, same queries on SQLite and PostgreSQL).
import { sql } from 'kysely';
import type { Dialect, Executor } from '../db/index.js';
import type { Principal } from '../http/auth.js';
import type { QuoteFileLocaleRow, QuoteFileRow, QuoteImportRow, QuoteOrderRow, QuoteProjectRow } from './tables.js';

export type Project = Omit<QuoteProjectRow, 'id'> & { id: number };
export type FileRow = Omit<QuoteFileRow, 'id'> & { id: number };
export type ImportRow = Omit<QuoteImportRow, 'id'> & { id: number };
export type OrderRow = Omit<QuoteOrderRow, 'id'> & { id: number };

// Rows per INSERT: 3000 rows of up to 9 columns stay under SQLite's (32766) and PostgreSQL's
// (65535) bound-parameter limits, and few statements keep a 100k-string import fast.
const BATCH = 3000;

export function chunks<T>(items: T[], size = BATCH): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

// ---- projects ---------------------------------------------------------------------------

/** A project the principal may see (its owner, or any project for an admin), else undefined. */
export async function findProject(db: Executor, id: number, principal: Principal): Promise<Project | undefined> {
  let query = db.selectFrom('quote_projects').selectAll().where('id', '=', id);
  if (principal.role !== 'admin') query = query.where('owner_id', '=', principal.userId);
  return (await query.executeTakeFirst()) as Project | undefined;
}

export async function listProjects(db: Executor, principal: Principal): Promise<Project[]> {
  let query = db.selectFrom('quote_projects').selectAll().orderBy('id');
  if (principal.role !== 'admin') query = query.where('owner_id', '=', principal.userId);
  return (await query.execute()) as Project[];
}

export async function targetLocales(db: Executor, projectId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('quote_project_languages')
    .select('locale')
    .where('project_id', '=', projectId)
    .orderBy('locale')
    .execute();
  return rows.map((row) => row.locale);
}

export async function addTargetLocales(db: Executor, projectId: number, locales: string[], now: number): Promise<void> {
  if (!locales.length) return;
  await db
    .insertInto('quote_project_languages')
    .values(locales.map((locale) => ({ project_id: projectId, locale, created_at: now })))
    .onConflict((oc) => oc.columns(['project_id', 'locale']).doNothing())
    .execute();
}

export async function setTargetLocales(db: Executor, projectId: number, locales: string[], now: number): Promise<void> {
  let remove = db.deleteFrom('quote_project_languages').where('project_id', '=', projectId);
  if (locales.length) remove = remove.where('locale', 'not in', locales);
  await remove.execute();
  await addTargetLocales(db, projectId, locales, now);
}

// ---- files and strings ---------------------------------------------------------------------

export async function findFile(db: Executor, projectId: number, name: string): Promise<FileRow | undefined> {
  return (await db
    .selectFrom('quote_files')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('name', '=', name)
    .executeTakeFirst()) as FileRow | undefined;
}

/**
 * The strings of a file in their order with their translation in one language (if any), in
 * batches of one read (a re-upload never shows half applied). SQLite reads on this thread, so
 * its rows are streamed (one 100k-row `all()` held the thread for 0.3–0.4 s): between batches
 * the caller gives the event loop a turn, and other queries wait for the connection.
 */
export async function* exportRows(
  db: Executor,
  dialect: Dialect,
  fileId: number,
  locale: string,
  size: number,
): AsyncGenerator<ExportRowObject[]> {
  const query = db
    .selectFrom('quote_strings as s')
    .leftJoin('quote_translations as t', (join) => join.onRef('t.string_id', '=', 's.id').on('t.locale', '=', locale))
    .select(['s.key', 's.context', 's.source', 's.source_plural', 't.forms', 't.fuzzy', 't.previous'])
    .where('s.file_id', '=', fileId)
    .orderBy('s.position');
  if (dialect === 'postgres') {
    // PostgreSQL's rows are parsed as they arrive, a network read at a time.
    yield* chunks(await query.execute(), size);
    return;
  }
  let batch: ExportRowObject[] = [];
  for await (const row of query.stream()) {
    batch.push(row);
    if (batch.length < size) continue;
    yield batch;
    batch = [];
  }
  if (batch.length) yield batch;
}

export type ExportRowObject = {
  key: string;
  context: string | null;
  source: string;
  source_plural: string | null;
  forms: string | null;
  fuzzy: number | null;
  previous: string | null;
};

/** The Plural-Forms header of a file's last upload in one language. */
export async function pluralFormsOf(db: Executor, fileId: number, locale: string): Promise<string | null> {
  const row = await db
    .selectFrom('quote_file_locales')
    .select('plural_forms')
    .where('file_id', '=', fileId)
    .where('locale', '=', locale)
    .executeTakeFirst();
  return row?.plural_forms ?? null;
}

export type FileWithCounts = FileRow & { counts: QuoteFileLocaleRow | null };

/** Files by name with their state counts in one language (null: no translation or order yet), in one query. */
export async function filesWithCounts(
  db: Executor,
  projectId: number,
  names: string[],
  locale: string,
): Promise<FileWithCounts[]> {
  if (!names.length) return [];
  const rows = await db
    .selectFrom('quote_files as f')
    .leftJoin('quote_file_locales as c', (join) => join.onRef('c.file_id', '=', 'f.id').on('c.locale', '=', locale))
    .selectAll('f')
    .select([
      'c.file_id as c_file_id',
      'c.not_translated_strings',
      'c.not_translated_words',
      'c.not_approved_strings',
      'c.not_approved_words',
      'c.outdated_strings',
      'c.outdated_words',
      'c.approved_strings',
      'c.approved_words',
      'c.translated_at',
      'c.ordered_at',
      'c.plural_forms',
    ])
    .where('f.project_id', '=', projectId)
    .where('f.name', 'in', names)
    .execute();
  return rows.map((row) => {
    const file: FileRow = {
      id: Number(row.id),
      project_id: row.project_id,
      name: row.name,
      format: row.format,
      string_count: row.string_count,
      word_count: row.word_count,
      meta: row.meta,
      uploaded_at: row.uploaded_at,
      last_import_id: row.last_import_id,
    };
    if (row.c_file_id == null) return { ...file, counts: null };
    const n = (value: unknown) => Number(value ?? 0);
    return {
      ...file,
      counts: {
        file_id: file.id,
        locale,
        not_translated_strings: n(row.not_translated_strings),
        not_translated_words: n(row.not_translated_words),
        not_approved_strings: n(row.not_approved_strings),
        not_approved_words: n(row.not_approved_words),
        outdated_strings: n(row.outdated_strings),
        outdated_words: n(row.outdated_words),
        approved_strings: n(row.approved_strings),
        approved_words: n(row.approved_words),
        translated_at: row.translated_at,
        ordered_at: row.ordered_at,
        plural_forms: row.plural_forms,
      },
    };
  });
}

/**
 * Recounts the phrase states of one file in one language (rules in docs/quotes.md), in one
 * aggregate query, and stores them: quotations then only add up these rows.
 */
export async function recountFileLocale(db: Executor, fileId: number, locale: string): Promise<void> {
  const baseline = await db
    .selectFrom('quote_file_locales')
    .select('ordered_at')
    .where('file_id', '=', fileId)
    .where('locale', '=', locale)
    .executeTakeFirst();
  const b = baseline?.ordered_at ?? 0;
  // 0 not translated, 1 not approved, 2 outdated, 3 approved and current (first match wins).
  const state = sql<number>`case
      when t.string_id is null or t.is_empty = 1 then 0
      when (t.stale = 1 and t.translated_at > ${b}) or (s.source_changed_at > t.translated_at and s.source_changed_at > ${b}) then 2
      when t.fuzzy = 1 then 1
      else 3 end`;
  const rows = await db
    .selectFrom('quote_strings as s')
    .leftJoin('quote_translations as t', (join) => join.onRef('t.string_id', '=', 's.id').on('t.locale', '=', locale))
    .select([
      state.as('state'),
      sql<number>`count(*)`.as('strings'),
      sql<number>`coalesce(sum(s.word_count), 0)`.as('words'),
      sql<number | null>`max(t.translated_at)`.as('latest'),
    ])
    .where('s.file_id', '=', fileId)
    .groupBy(sql`1`) // by position: PostgreSQL would not match the parameterized expression
    .execute();
  const counts = [0, 1, 2, 3].map((n) => rows.find((row) => Number(row.state) === n));
  const latest = rows.reduce<number | null>(
    (max, row) => (row.latest != null && (max == null || Number(row.latest) > max) ? Number(row.latest) : max),
    null,
  );
  const values = {
    not_translated_strings: Number(counts[0]?.strings ?? 0),
    not_translated_words: Number(counts[0]?.words ?? 0),
    not_approved_strings: Number(counts[1]?.strings ?? 0),
    not_approved_words: Number(counts[1]?.words ?? 0),
    outdated_strings: Number(counts[2]?.strings ?? 0),
    outdated_words: Number(counts[2]?.words ?? 0),
    approved_strings: Number(counts[3]?.strings ?? 0),
    approved_words: Number(counts[3]?.words ?? 0),
    translated_at: latest,
  };
  await db
    .insertInto('quote_file_locales')
    .values({ file_id: fileId, locale, ordered_at: null, plural_forms: null, ...values })
    .onConflict((oc) => oc.columns(['file_id', 'locale']).doUpdateSet(values))
    .execute();
}

/** The languages that have counts for a file (every one must be recounted after a change). */
export async function countedLocales(db: Executor, fileId: number): Promise<string[]> {
  const rows = await db.selectFrom('quote_file_locales').select('locale').where('file_id', '=', fileId).execute();
  return rows.map((row) => row.locale);
}

// ---- imports --------------------------------------------------------------------------------

export async function findImport(db: Executor, projectId: number, id: number): Promise<ImportRow | undefined> {
  return (await db
    .selectFrom('quote_imports')
    .select([
      'id',
      'project_id',
      'file_name',
      'format',
      'locale',
      'keep_all_strings',
      'allow_same_as_original',
      'status',
      'message',
      'byte_count',
      'string_count',
      'word_count',
      'attempts',
      'created_at',
      'started_at',
      'finished_at',
    ])
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst()) as ImportRow | undefined;
}

/** Drops the stored uploads of imports that have ended. */
export async function dropPayloads(db: Executor, importIds: number[]): Promise<void> {
  if (importIds.length) await db.deleteFrom('quote_import_payloads').where('import_id', 'in', importIds).execute();
}

// ---- orders and the translators' backlog -------------------------------------------------------

/** Each translator's end of assigned work in a language, for work still running at `now`. */
export async function backlog(db: Executor, locale: string, now: number): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('quote_assignments')
    .select(['translator', sql<number>`max(busy_until)`.as('until')])
    .where('locale', '=', locale)
    .where('busy_until', '>', now)
    .groupBy('translator')
    .execute();
  return new Map(rows.map((row) => [row.translator, Number(row.until)]));
}

/** The translator with the most words translated on the project in this language. */
export async function preferredTranslator(db: Executor, projectId: number, locale: string): Promise<string | null> {
  const row = await db
    .selectFrom('quote_assignments')
    .select(['translator', sql<number>`sum(word_count)`.as('words')])
    .where('project_id', '=', projectId)
    .where('locale', '=', locale)
    .where('role', '=', 'translate')
    .groupBy('translator')
    .orderBy(sql`sum(word_count)`, 'desc')
    .orderBy('translator')
    .executeTakeFirst();
  return row?.translator ?? null;
}
