// All SQL of the quotation service (Kysely, parameterized, same queries on SQLite and PostgreSQL).
import { sql, type ExpressionBuilder, type Selectable } from 'kysely';
import { columnsOf, insertRows, updateRows, type Column } from '../../db/bulk.js';
import { copyRows, type CopyValue } from '../../db/copy.js';
import type { Dialect, Executor } from '../../db/index.js';
import type { DB } from '../../db/schema.js';
import type { Principal } from '../../http/auth.js';
import type {
  QuoteAssignmentRow,
  QuoteFileLocaleRow,
  QuoteFileRow,
  QuoteImportRow,
  QuoteOrderRow,
  QuoteProjectGroupRow,
  QuoteProjectRow,
  QuoteScreenshotRow,
  QuoteScreenshotTagRow,
  QuoteStringRow,
  QuoteTranslationRow,
} from '../tables.js';

export type Project = Omit<QuoteProjectRow, 'id'> & { id: number };
export type ProjectGroup = Omit<QuoteProjectGroupRow, 'id'> & { id: number };
export type FileRow = Omit<QuoteFileRow, 'id'> & { id: number };
export type ImportRow = Omit<QuoteImportRow, 'id' | 'lease_until'> & { id: number };
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
  return query.executeTakeFirst();
}

export async function listProjects(db: Executor, principal: Principal): Promise<Project[]> {
  let query = db.selectFrom('quote_projects').selectAll().orderBy('id');
  if (principal.role !== 'admin') query = query.where('owner_id', '=', principal.userId);
  return query.execute();
}

export async function insertProject(db: Executor, values: Omit<Project, 'id'>): Promise<number> {
  const row = await db.insertInto('quote_projects').values(values).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

export async function updateProject(
  db: Executor,
  id: number,
  values: Pick<Project, 'name' | 'description' | 'base_locale' | 'project_type' | 'updated_at'>,
): Promise<void> {
  await db.updateTable('quote_projects').set(values).where('id', '=', id).execute();
}

/** Deletes a project; its languages, files, strings, translations, imports and orders go with it (cascade). */
export async function deleteProject(db: Executor, id: number): Promise<void> {
  await db.deleteFrom('quote_projects').where('id', '=', id).execute();
}

export async function targetLocales(db: Executor, projectId: number): Promise<string[]> {
  return (await targetLocalesOf(db, [projectId])).get(projectId) ?? [];
}

/** The target languages of several projects, each project's in code order. */
export async function targetLocalesOf(db: Executor, projectIds: number[]): Promise<Map<number, string[]>> {
  const byProject = new Map<number, string[]>();
  if (!projectIds.length) return byProject;
  const rows = await db
    .selectFrom('quote_project_languages')
    .select(['project_id', 'locale'])
    .where('project_id', 'in', projectIds)
    .orderBy('project_id')
    .orderBy('locale')
    .execute();
  for (const row of rows) {
    const locales = byProject.get(row.project_id) ?? [];
    if (!locales.length) byProject.set(row.project_id, locales);
    locales.push(row.locale);
  }
  return byProject;
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

export interface StringTotals {
  strings: number;
  words: number;
}

/** Strings and words of the files of several projects (projects without files are absent). */
export async function fileTotalsOf(db: Executor, projectIds: number[]): Promise<Map<number, StringTotals>> {
  if (!projectIds.length) return new Map();
  const rows = await db
    .selectFrom('quote_files')
    .select(['project_id', sql<number>`sum(string_count)`.as('strings'), sql<number>`sum(word_count)`.as('words')])
    .where('project_id', 'in', projectIds)
    .groupBy('project_id')
    .execute();
  return new Map(rows.map((row) => [row.project_id, { strings: row.strings, words: row.words }]));
}

export async function hasFiles(db: Executor, projectId: number): Promise<boolean> {
  const file = await db
    .selectFrom('quote_files')
    .select('id')
    .where('project_id', '=', projectId)
    .limit(1)
    .executeTakeFirst();
  return file !== undefined;
}

export interface LanguageCounts {
  locale: string;
  approved: number;
  /** The latest translation of the language in any file of the project. */
  latest: number | null;
}

/** The strings of a project's files, their last upload, and the approved strings of each language. */
export async function languageProgress(
  db: Executor,
  projectId: number,
): Promise<{ strings: number; lastUpload: number | null; languages: LanguageCounts[] }> {
  const [files, languages] = await Promise.all([
    db
      .selectFrom('quote_files')
      .select([
        sql<number>`coalesce(sum(string_count), 0)`.as('strings'),
        sql<number | null>`max(uploaded_at)`.as('last'),
      ])
      .where('project_id', '=', projectId)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('quote_file_locales as c')
      .innerJoin('quote_files as f', 'f.id', 'c.file_id')
      .select([
        'c.locale',
        sql<number>`sum(c.approved_strings)`.as('approved'),
        sql<number | null>`max(c.translated_at)`.as('latest'),
      ])
      .where('f.project_id', '=', projectId)
      .groupBy('c.locale')
      .execute(),
  ]);
  return { strings: files.strings, lastUpload: files.last, languages };
}

// ---- files and strings ---------------------------------------------------------------------

export async function findFile(db: Executor, projectId: number, name: string): Promise<FileRow | undefined> {
  return db
    .selectFrom('quote_files')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('name', '=', name)
    .executeTakeFirst();
}

export async function deleteFile(db: Executor, fileId: number): Promise<void> {
  await db.deleteFrom('quote_files').where('id', '=', fileId).execute();
}

export async function countFiles(db: Executor, projectId: number): Promise<number> {
  const row = await db
    .selectFrom('quote_files')
    .select(db.fn.countAll<number>().as('n'))
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow();
  return row.n;
}

/** A page of a project's files by name, with the status of each one's last import. */
export async function pageOfFiles(db: Executor, projectId: number, limit: number, offset: number) {
  return db
    .selectFrom('quote_files as f')
    .leftJoin('quote_imports as i', 'i.id', 'f.last_import_id')
    .select(['f.name', 'f.format', 'f.string_count', 'f.word_count', 'f.uploaded_at', 'f.last_import_id', 'i.status'])
    .where('f.project_id', '=', projectId)
    .orderBy('f.name')
    .limit(limit)
    .offset(offset)
    .execute();
}

export type NewFile = Omit<FileRow, 'id'>;

export async function insertFile(db: Executor, values: NewFile): Promise<FileRow> {
  const { id } = await db.insertInto('quote_files').values(values).returning('id').executeTakeFirstOrThrow();
  return { ...values, id };
}

/** Sets a file's totals from its strings, after an upload of its source. */
export async function updateUploadedFile(
  db: Executor,
  fileId: number,
  upload: Pick<FileRow, 'format' | 'meta' | 'uploaded_at' | 'last_import_id'>,
): Promise<void> {
  const totals = await db
    .selectFrom('quote_strings')
    .select([db.fn.countAll<number>().as('strings'), sql<number>`coalesce(sum(word_count), 0)`.as('words')])
    .where('file_id', '=', fileId)
    .executeTakeFirstOrThrow();
  await db
    .updateTable('quote_files')
    .set({ ...upload, string_count: totals.strings, word_count: totals.words })
    .where('id', '=', fileId)
    .execute();
}

export type SourceString = Pick<
  Selectable<QuoteStringRow>,
  'id' | 'key' | 'source' | 'source_plural' | 'position' | 'word_count'
>;

/** The strings of a file by key. */
export async function stringsByKey(db: Executor, fileId: number): Promise<Map<string, SourceString>> {
  const rows = await db
    .selectFrom('quote_strings')
    .select(['id', 'key', 'source', 'source_plural', 'position', 'word_count'])
    .where('file_id', '=', fileId)
    .execute();
  return new Map(rows.map((row) => [row.key, row]));
}

export async function deleteStrings(db: Executor, ids: number[]): Promise<void> {
  for (const batch of chunks(ids)) await db.deleteFrom('quote_strings').where('id', 'in', batch).execute();
}

export type StoredTranslation = Pick<Selectable<QuoteTranslationRow>, 'forms' | 'fuzzy' | 'stale' | 'previous'>;

/** The translations of a file's strings in one language, by string id. */
export async function translationsOf(
  db: Executor,
  fileId: number,
  locale: string,
): Promise<Map<number, StoredTranslation>> {
  const rows = await db
    .selectFrom('quote_translations as t')
    .innerJoin('quote_strings as s', 's.id', 't.string_id')
    .select(['t.string_id', 't.forms', 't.fuzzy', 't.stale', 't.previous'])
    .where('s.file_id', '=', fileId)
    .where('t.locale', '=', locale)
    .execute();
  return new Map(rows.map(({ string_id: id, ...translation }) => [id, translation]));
}

/** Keeps the Plural-Forms header of a file's upload in one language (its counts row exists). */
export async function setPluralForms(db: Executor, fileId: number, locale: string, pluralForms: string) {
  await db
    .updateTable('quote_file_locales')
    .set({ plural_forms: pluralForms })
    .where((eb) => eb.and({ file_id: fileId, locale }))
    .execute();
}

// The columns of an import's bulk writes, in the order of their rows' values.
const STRING_COLUMNS = columnsOf('quote_strings', {
  file_id: 'bigint',
  key: 'text',
  context: 'text',
  source: 'text',
  source_plural: 'text',
  word_count: 'integer',
  position: 'integer',
  source_changed_at: 'bigint',
});
const STRING_KEY: [Column<'quote_strings'>] = [{ name: 'id', type: 'bigint' }];
const CHANGED_SOURCE = STRING_COLUMNS.slice(3); // source … source_changed_at
const POSITION = columnsOf('quote_strings', { position: 'integer' });
const TRANSLATION_KEY: [Column<'quote_translations'>, Column<'quote_translations'>] = [
  { name: 'string_id', type: 'bigint' },
  { name: 'locale', type: 'text' },
];
const TRANSLATION_VALUES = columnsOf('quote_translations', {
  forms: 'text',
  is_empty: 'integer',
  fuzzy: 'integer',
  stale: 'integer',
  previous: 'text',
  translated_at: 'bigint',
});

// SQLite runs on this thread: a big import's writes go in slices of SLICE rows with a turn of the
// event loop between them, so other requests are answered meanwhile (only the database waits).
const SLICE = 5000;

async function inSlices(values: unknown[], width: number, write: (rows: unknown[]) => Promise<unknown>) {
  for (let i = 0; i < values.length; i += SLICE * width) {
    if (i) await new Promise((resolve) => setImmediate(resolve));
    await write(values.slice(i, i + SLICE * width));
  }
}

/**
 * The bulk writes of an import; each takes its rows' values one after another (db/bulk.ts):
 * - strings: file_id, key, context, source, source_plural, word_count, position, source_changed_at;
 * - changedSources: id, source, source_plural, word_count, position, source_changed_at;
 * - moves: id, position;
 * - translations (new or changed): string_id, locale, forms, is_empty, fuzzy, stale, previous, translated_at.
 */
export const importWrites = {
  strings: (db: Executor, dialect: Dialect, values: unknown[]) =>
    inSlices(values, STRING_COLUMNS.length, (rows) => insertRows(db, dialect, 'quote_strings', STRING_COLUMNS, rows)),
  changedSources: (db: Executor, dialect: Dialect, values: unknown[]) =>
    inSlices(values, 1 + CHANGED_SOURCE.length, (rows) =>
      updateRows(db, dialect, 'quote_strings', STRING_KEY, CHANGED_SOURCE, rows),
    ),
  moves: (db: Executor, dialect: Dialect, values: unknown[]) =>
    inSlices(values, 2, (rows) => updateRows(db, dialect, 'quote_strings', STRING_KEY, POSITION, rows)),
  newTranslations: (db: Executor, dialect: Dialect, values: unknown[]) =>
    inSlices(values, TRANSLATION_KEY.length + TRANSLATION_VALUES.length, (rows) =>
      insertRows(db, dialect, 'quote_translations', [...TRANSLATION_KEY, ...TRANSLATION_VALUES], rows),
    ),
  changedTranslations: (db: Executor, dialect: Dialect, values: unknown[]) =>
    inSlices(values, TRANSLATION_KEY.length + TRANSLATION_VALUES.length, (rows) =>
      updateRows(db, dialect, 'quote_translations', TRANSLATION_KEY, TRANSLATION_VALUES, rows),
    ),
};

/** A string of an uploaded source file, as copied by copyNewStrings or staged for mergeStrings. */
export interface StagedString {
  key: string;
  context: string | null;
  source: string;
  sourcePlural: string | null;
  words: number;
}

/** The COPY rows of strings coming in batches, in file order: the values of `row` then the position. */
async function* positioned(
  batches: AsyncIterable<readonly StagedString[]>,
  row: (s: StagedString) => CopyValue[],
): AsyncGenerator<CopyValue[][]> {
  let position = 0;
  for await (const batch of batches) yield batch.map((s) => [...row(s), position++]);
}

/**
 * PostgreSQL: the strings of a file that has none yet, copied straight into quote_strings in
 * their order as they come (db/copy.ts; nothing to merge, so no staging table).
 */
export async function copyNewStrings(
  db: Executor,
  fileId: number,
  strings: AsyncIterable<readonly StagedString[]>,
  at: number,
): Promise<void> {
  await copyRows(
    db,
    'quote_strings',
    ['file_id', 'key', 'context', 'source', 'source_plural', 'word_count', 'source_changed_at', 'position'],
    positioned(strings, (s) => [fileId, s.key, s.context, s.source, s.sourcePlural, s.words, at]),
  );
}

const STAGED_COLUMNS = ['key', 'context', 'source', 'source_plural', 'word_count', 'position'];

/**
 * PostgreSQL: a source file's strings (in their order) replace the file's strings, set-wise: they
 * are copied into a staging table as they come (db/copy.ts), then changed sources are updated
 * (restarting their "outdated" clock), moved strings get their new position, new strings are
 * inserted and, with `deleteMissing`, strings no longer in the file are deleted. The same writes
 * as the per-row diff that importWrites applies on SQLite, without the file's rows making a round trip.
 */
export async function mergeStrings(
  db: Executor,
  fileId: number,
  strings: AsyncIterable<readonly StagedString[]>,
  at: number,
  deleteMissing: boolean,
): Promise<void> {
  await sql`create temp table quote_import_strings (
      key text not null, context text, source text not null, source_plural text,
      word_count integer not null, position integer not null
    ) on commit drop`.execute(db);
  await copyRows(
    db,
    'quote_import_strings',
    STAGED_COLUMNS,
    positioned(strings, (s) => [s.key, s.context, s.source, s.sourcePlural, s.words]),
  );
  await sql`update quote_strings as s
    set source = v.source, source_plural = v.source_plural, word_count = v.word_count,
      position = v.position, source_changed_at = ${at}
    from quote_import_strings as v
    where s.file_id = ${fileId} and s.key = v.key
      and (s.source <> v.source or s.source_plural is distinct from v.source_plural)`.execute(db);
  // Unchanged sources keep their word count and clock; only their position follows the file.
  await sql`update quote_strings as s set position = v.position
    from quote_import_strings as v
    where s.file_id = ${fileId} and s.key = v.key and s.position <> v.position`.execute(db);
  if (deleteMissing) {
    await sql`delete from quote_strings as s
      where s.file_id = ${fileId}
        and not exists (select from quote_import_strings as v where v.key = s.key)`.execute(db);
  }
  // In file order, as on SQLite: new strings' ids follow their positions.
  await sql`insert into quote_strings
      (file_id, key, context, source, source_plural, word_count, position, source_changed_at)
    select ${fileId}, v.key, v.context, v.source, v.source_plural, v.word_count, v.position, ${at}
    from quote_import_strings as v
    where not exists (select from quote_strings as s where s.file_id = ${fileId} and s.key = v.key)
    order by v.position`.execute(db);
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
    .select(['s.key', 's.context', 's.source', 's.source_plural', 't.forms', 't.fuzzy', 't.stale', 't.previous'])
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
  stale: number | null;
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
      id: row.id,
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
    // The left-joined counts are all present when the row is (c_file_id).
    const n = (value: number | null) => value ?? 0;
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
      when (t.stale = 1 and t.translated_at > ${b})
        or (s.source_changed_at > t.translated_at and s.source_changed_at > ${b}) then 2
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
  const counts = [0, 1, 2, 3].map((n) => rows.find((row) => row.state === n));
  const latest = rows.reduce<number | null>(
    (max, row) => (row.latest != null && (max == null || row.latest > max) ? row.latest : max),
    null,
  );
  const values = {
    not_translated_strings: counts[0]?.strings ?? 0,
    not_translated_words: counts[0]?.words ?? 0,
    not_approved_strings: counts[1]?.strings ?? 0,
    not_approved_words: counts[1]?.words ?? 0,
    outdated_strings: counts[2]?.strings ?? 0,
    outdated_words: counts[2]?.words ?? 0,
    approved_strings: counts[3]?.strings ?? 0,
    approved_words: counts[3]?.words ?? 0,
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
  return db
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
    .executeTakeFirst();
}

export type NewImport = Omit<ImportRow, 'id'>;

/** Stores an import and, unless it failed already, the upload it reads (kept until the import ends). */
export async function insertImport(db: Executor, values: NewImport, payload: Buffer | null): Promise<number> {
  const row = await db.insertInto('quote_imports').values(values).returning('id').executeTakeFirstOrThrow();
  if (payload) await db.insertInto('quote_import_payloads').values({ import_id: row.id, payload }).execute();
  return row.id;
}

export async function baseLocaleOf(db: Executor, projectId: number): Promise<string | undefined> {
  const project = await db
    .selectFrom('quote_projects')
    .select('base_locale')
    .where('id', '=', projectId)
    .executeTakeFirst();
  return project?.base_locale;
}

/** One try of a running import: the attempt that claimed it is the one that may end it. */
export interface HeldImport {
  id: number;
  attempts: number;
}

/** The running imports of `held` that are still theirs to finish: `held.attempts` (one statement). */
const stillHeld = (held: HeldImport[]) => (eb: ExpressionBuilder<DB, 'quote_imports'>) =>
  eb.and([
    eb('status', '=', 'running'),
    eb.or(held.map((job) => eb.and([eb('id', '=', job.id), eb('attempts', '=', job.attempts)]))),
  ]);

/**
 * Marks an import completed with what it read, and drops its upload; false when this try of it
 * (`job.attempts`) no longer holds it (its lease ran out and another process took it over, jobs.ts).
 */
export async function completeImport(
  db: Executor,
  job: HeldImport,
  counts: StringTotals,
  at: number,
): Promise<boolean> {
  const completed = await db
    .updateTable('quote_imports')
    .set({
      status: 'completed',
      message: null,
      string_count: counts.strings,
      word_count: counts.words,
      finished_at: at,
      lease_until: null,
    })
    .where(stillHeld([job]))
    .executeTakeFirst();
  if (!Number(completed.numUpdatedRows)) return false;
  await dropPayloads(db, [job.id]);
  return true;
}

/** Drops the stored uploads of imports that have ended. */
export async function dropPayloads(db: Executor, importIds: number[]): Promise<void> {
  if (importIds.length) await db.deleteFrom('quote_import_payloads').where('import_id', 'in', importIds).execute();
}

// ---- the import queue (jobs.ts) -----------------------------------------------------------------

export type ClaimedImport = ImportRow & { payload: Buffer | null };

/** An upload's payload at hand, as stored for its import. */
export interface Upload {
  importId: number;
  payload: Buffer;
}

/**
 * Claims the oldest queued import for this process (queued → running, one atomic UPDATE that
 * another process may win: then the next one is tried, five times at most), held until
 * `leaseUntil`, with its upload, read from the table unless it is the one at hand.
 */
export async function claimImport(
  db: Executor,
  now: number,
  leaseUntil: number,
  atHand: Upload | null = null,
): Promise<ClaimedImport | null> {
  for (let tries = 0; tries < 5; tries++) {
    const next = await db
      .selectFrom('quote_imports')
      .select('id')
      .where('status', '=', 'queued')
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    if (!next) return null;
    const claimed = await db
      .updateTable('quote_imports')
      .set((eb) => ({ status: 'running', started_at: now, lease_until: leaseUntil, attempts: eb('attempts', '+', 1) }))
      .where('id', '=', next.id)
      .where('status', '=', 'queued')
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) continue;
    const job = db.selectFrom('quote_imports').selectAll().where('id', '=', next.id).executeTakeFirstOrThrow();
    if (atHand?.importId === next.id) return { ...(await job), payload: atHand.payload };
    const [row, stored] = await Promise.all([
      job,
      db.selectFrom('quote_import_payloads').select('payload').where('import_id', '=', next.id).executeTakeFirst(),
    ]);
    return { ...row, payload: stored?.payload ?? null };
  }
  return null;
}

/** Renews the leases of the imports this process works on, those that are still its own. */
export async function renewImportLeases(db: Executor, held: HeldImport[], leaseUntil: number): Promise<void> {
  if (!held.length) return;
  await db.updateTable('quote_imports').set({ lease_until: leaseUntil }).where(stillHeld(held)).execute();
}

/** Fails a running import with a message for the uploader and drops its upload; false if this try lost it. */
export async function failImport(db: Executor, job: HeldImport, message: string, at: number): Promise<boolean> {
  const failed = await db
    .updateTable('quote_imports')
    .set({ status: 'failed', message, finished_at: at, lease_until: null })
    .where(stillHeld([job]))
    .executeTakeFirst();
  if (!Number(failed.numUpdatedRows)) return false;
  await dropPayloads(db, [job.id]);
  return true;
}

/** Queues again a running import this try could not finish (the database went away under it). */
export async function requeueImport(db: Executor, job: HeldImport): Promise<void> {
  await db
    .updateTable('quote_imports')
    .set({ status: 'queued', lease_until: null })
    .where(stillHeld([job]))
    .execute();
}

/**
 * Fails the running imports whose lease ran out before `now` (no live process works on them) that
 * have had `maxAttempts`, and drops their uploads. A row without a lease counts as run out.
 */
export async function failStaleImports(db: Executor, now: number, maxAttempts: number, message: string): Promise<void> {
  const failed = await db
    .updateTable('quote_imports')
    .set({ status: 'failed', message, finished_at: now, lease_until: null })
    .where('status', '=', 'running')
    .where(leaseRunOut(now))
    .where('attempts', '>=', maxAttempts)
    .returning('id')
    .execute();
  await dropPayloads(
    db,
    failed.map((row) => row.id),
  );
}

/** Queues again the running imports whose lease ran out before `now`; returns their number. */
export async function requeueStaleImports(db: Executor, now: number): Promise<number> {
  const requeued = await db
    .updateTable('quote_imports')
    .set({ status: 'queued', lease_until: null })
    .where('status', '=', 'running')
    .where(leaseRunOut(now))
    .executeTakeFirst();
  return Number(requeued.numUpdatedRows);
}

const leaseRunOut = (now: number) => (eb: ExpressionBuilder<DB, 'quote_imports'>) =>
  eb.or([eb('lease_until', '<', now), eb('lease_until', 'is', null)]);

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
  return new Map(rows.map((row) => [row.translator, row.until]));
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

export type NewOrder = Omit<OrderRow, 'id'>;
export type NewAssignment = Omit<AssignmentRow, 'id'>;

/** Stores an order with its assignments (the translators' backlog from now on); returns its id. */
export async function insertOrder(
  db: Executor,
  values: NewOrder,
  assignments: Omit<NewAssignment, 'order_id'>[],
): Promise<number> {
  const { id } = await db.insertInto('quote_orders').values(values).returning('id').executeTakeFirstOrThrow();
  await db
    .insertInto('quote_assignments')
    .values(assignments.map((assignment) => ({ ...assignment, order_id: id })))
    .execute();
  return id;
}

/** Moves the "outdated" baseline of a file in a language to the time of an order. */
export async function markOrdered(db: Executor, fileId: number, locale: string, orderedAt: number): Promise<void> {
  await db
    .insertInto('quote_file_locales')
    .values({
      file_id: fileId,
      locale,
      ordered_at: orderedAt,
      translated_at: null,
      plural_forms: null,
      not_translated_strings: 0,
      not_translated_words: 0,
      not_approved_strings: 0,
      not_approved_words: 0,
      outdated_strings: 0,
      outdated_words: 0,
      approved_strings: 0,
      approved_words: 0,
    })
    .onConflict((oc) => oc.columns(['file_id', 'locale']).doUpdateSet({ ordered_at: orderedAt }))
    .execute();
}

export async function findOrder(db: Executor, projectId: number, id: number): Promise<OrderRow | undefined> {
  return db
    .selectFrom('quote_orders')
    .selectAll()
    .where((eb) => eb.and({ project_id: projectId, id }))
    .executeTakeFirst();
}

/**
 * The orders of a project, or those of one of its files (`files` holds a JSON array of names).
 * The file's name is compared with each element, as a parameter, in each dialect's JSON function.
 */
function ordersOf(db: Executor, dialect: Dialect, projectId: number, fileName: string | undefined) {
  const query = db.selectFrom('quote_orders').where('project_id', '=', projectId);
  if (!fileName) return query;
  return query.where(
    dialect === 'postgres'
      ? sql<boolean>`exists (select 1 from json_array_elements_text(cast(files as json)) as f(name)
          where f.name = ${fileName})`
      : sql<boolean>`exists (select 1 from json_each(files) where json_each.value = ${fileName})`,
  );
}

export async function countOrders(db: Executor, dialect: Dialect, projectId: number, fileName?: string) {
  const row = await ordersOf(db, dialect, projectId, fileName)
    .select(db.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return row.n;
}

/** A page of a project's orders (or of one file's), newest first. */
export async function pageOfOrders(
  db: Executor,
  dialect: Dialect,
  projectId: number,
  fileName: string | undefined,
  limit: number,
  offset: number,
): Promise<OrderRow[]> {
  return ordersOf(db, dialect, projectId, fileName)
    .selectAll()
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
}

export type AssignmentRow = Selectable<QuoteAssignmentRow>;

/** The assignments of several orders, each order's in the order they were made. */
export async function assignmentsOf(db: Executor, orderIds: number[]): Promise<Map<number, AssignmentRow[]>> {
  const byOrder = new Map<number, AssignmentRow[]>(orderIds.map((id) => [id, []]));
  if (!orderIds.length) return byOrder;
  const rows = await db
    .selectFrom('quote_assignments')
    .selectAll()
    .where('order_id', 'in', orderIds)
    .orderBy('id')
    .execute();
  for (const row of rows) byOrder.get(row.order_id)?.push(row);
  return byOrder;
}

// ---- project groups ----------------------------------------------------------------------------

/** Groups the principal may see: its own, or every group for an admin. */
function groupsOf(db: Executor, principal: Principal) {
  const query = db.selectFrom('quote_project_groups');
  return principal.role === 'admin' ? query : query.where('owner_id', '=', principal.userId);
}

export async function findGroup(db: Executor, id: number, principal: Principal): Promise<ProjectGroup | undefined> {
  return groupsOf(db, principal).selectAll().where('id', '=', id).executeTakeFirst();
}

export async function countGroups(db: Executor, principal: Principal): Promise<number> {
  const row = await groupsOf(db, principal).select(db.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function pageOfGroups(
  db: Executor,
  principal: Principal,
  limit: number,
  offset: number,
): Promise<ProjectGroup[]> {
  return groupsOf(db, principal).selectAll().orderBy('id').limit(limit).offset(offset).execute();
}

export async function insertGroup(db: Executor, values: Omit<ProjectGroup, 'id'>): Promise<number> {
  const row = await db.insertInto('quote_project_groups').values(values).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

/** Deletes a group; its projects go with it, and everything theirs (cascade). */
export async function deleteGroup(db: Executor, id: number): Promise<void> {
  await db.deleteFrom('quote_project_groups').where('id', '=', id).execute();
}

/** The projects of a group, oldest first. */
export async function projectsOfGroup(db: Executor, groupId: number): Promise<Pick<Project, 'id' | 'name'>[]> {
  return db
    .selectFrom('quote_projects')
    .select(['id', 'name'])
    .where('project_group_id', '=', groupId)
    .orderBy('id')
    .execute();
}

/** The languages of a group's projects (their base and target languages), each once. */
export async function groupLocales(db: Executor, groupId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('quote_projects as p')
    .select('p.base_locale as locale')
    .where('p.project_group_id', '=', groupId)
    .union(
      db
        .selectFrom('quote_project_languages as l')
        .innerJoin('quote_projects as p', 'p.id', 'l.project_id')
        .select('l.locale')
        .where('p.project_group_id', '=', groupId),
    )
    .execute();
  return rows.map((row) => row.locale);
}

// ---- import tasks ------------------------------------------------------------------------------

/** The imports of a project, or those in some states. */
function importsOf(db: Executor, projectId: number, statuses: string[] | null) {
  const query = db.selectFrom('quote_imports').where('project_id', '=', projectId);
  return statuses ? query.where('status', 'in', statuses) : query;
}

export async function countImports(db: Executor, projectId: number, statuses: string[] | null): Promise<number> {
  const row = await importsOf(db, projectId, statuses)
    .select(db.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A page of a project's imports, newest first. */
export async function pageOfImports(
  db: Executor,
  projectId: number,
  statuses: string[] | null,
  limit: number,
  offset: number,
) {
  return importsOf(db, projectId, statuses)
    .select(['id', 'file_name', 'status', 'created_at'])
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
}

/** The files of a project by name (an export over all of them). */
export async function filesOfProject(db: Executor, projectId: number): Promise<Pick<FileRow, 'id' | 'name'>[]> {
  return db
    .selectFrom('quote_files')
    .select(['id', 'name'])
    .where('project_id', '=', projectId)
    .orderBy('name')
    .execute();
}

// ---- screenshots -------------------------------------------------------------------------------

export type ScreenshotTag = Omit<QuoteScreenshotTagRow, 'screenshot_id' | 'position'>;
export type ScreenshotRow = Omit<QuoteScreenshotRow, 'id' | 'image'> & { id: number };

/**
 * Stores a screenshot under its name in the project, replacing the image and the tags of one
 * stored before under that name (one atomic upsert, so two uploads of one name never clash).
 */
export async function saveScreenshot(
  db: Executor,
  values: Omit<QuoteScreenshotRow, 'id'>,
  tags: ScreenshotTag[],
): Promise<number> {
  const { id } = await db
    .insertInto('quote_screenshots')
    .values(values)
    .onConflict((oc) =>
      oc.columns(['project_id', 'name']).doUpdateSet({
        mime: values.mime,
        image: values.image,
        byte_count: values.byte_count,
        updated_at: values.updated_at,
      }),
    )
    .returning('id')
    .executeTakeFirstOrThrow();
  await db.deleteFrom('quote_screenshot_tags').where('screenshot_id', '=', id).execute();
  for (const batch of chunks(tags.map((tag, position) => ({ ...tag, screenshot_id: id, position })))) {
    await db.insertInto('quote_screenshot_tags').values(batch).execute();
  }
  return id;
}

export async function countScreenshots(db: Executor, projectId: number): Promise<number> {
  const row = await db
    .selectFrom('quote_screenshots')
    .select(db.fn.countAll<number>().as('n'))
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A page of a project's screenshots by name (without their images), or of some of them (`ids`). */
export async function pageOfScreenshots(
  db: Executor,
  projectId: number,
  limit: number,
  offset: number,
  ids?: number[],
): Promise<ScreenshotRow[]> {
  let query = db
    .selectFrom('quote_screenshots')
    .select(['id', 'project_id', 'name', 'mime', 'byte_count', 'created_at', 'updated_at'])
    .where('project_id', '=', projectId);
  if (ids) query = query.where('id', 'in', ids.length ? ids : [0]);
  return query.orderBy('name').limit(limit).offset(offset).execute();
}

/** The tags of several screenshots, each one's in the order they were sent. */
export async function tagsOf(db: Executor, screenshotIds: number[]): Promise<Map<number, ScreenshotTag[]>> {
  const byScreenshot = new Map<number, ScreenshotTag[]>(screenshotIds.map((id) => [id, []]));
  if (!screenshotIds.length) return byScreenshot;
  const rows = await db
    .selectFrom('quote_screenshot_tags')
    .select(['screenshot_id', 'key', 'file_name', 'x', 'y', 'width', 'height'])
    .where('screenshot_id', 'in', screenshotIds)
    .orderBy('screenshot_id')
    .orderBy('position')
    .execute();
  for (const { screenshot_id: id, ...tag } of rows) byScreenshot.get(id)?.push(tag);
  return byScreenshot;
}

export async function screenshotImage(db: Executor, projectId: number, id: number) {
  return db
    .selectFrom('quote_screenshots')
    .select(['name', 'mime', 'image'])
    .where((eb) => eb.and({ project_id: projectId, id }))
    .executeTakeFirst();
}
