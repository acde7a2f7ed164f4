// SQL of a project's files: their rows, and the phrase-state counts of each file in each language.
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';
import type { QuoteFileLocaleRow } from '../tables.js';
import { COLLECTION_FORMAT, type FileRow } from './rows.js';

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

/** Uploaded files, or phrase collections (files of COLLECTION_FORMAT): each has its own list. */
export type FileKind = 'files' | 'collections';

const isKind = (kind: FileKind) => (kind === 'collections' ? ('=' as const) : ('<>' as const));

export async function countFiles(db: Executor, projectId: number, kind: FileKind): Promise<number> {
  const row = await db
    .selectFrom('quote_files')
    .select(db.fn.countAll<number>().as('n'))
    .where('project_id', '=', projectId)
    .where('format', isKind(kind), COLLECTION_FORMAT)
    .executeTakeFirstOrThrow();
  return row.n;
}

/** A page of a project's files (or collections) by name, with the status of each one's last import. */
export async function pageOfFiles(db: Executor, projectId: number, kind: FileKind, limit: number, offset: number) {
  return db
    .selectFrom('quote_files as f')
    .leftJoin('quote_imports as i', 'i.id', 'f.last_import_id')
    .select(['f.name', 'f.format', 'f.string_count', 'f.word_count', 'f.uploaded_at', 'f.created_at'])
    .select(['f.last_import_id', 'i.status'])
    .where('f.project_id', '=', projectId)
    .where('f.format', isKind(kind), COLLECTION_FORMAT)
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

/** Keeps the Plural-Forms header of a file's upload in one language (its counts row exists). */
export async function setPluralForms(db: Executor, fileId: number, locale: string, pluralForms: string) {
  await db
    .updateTable('quote_file_locales')
    .set({ plural_forms: pluralForms })
    .where((eb) => eb.and({ file_id: fileId, locale }))
    .execute();
}

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
      created_at: row.created_at,
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

/** The files of a project by name (an export over all of them). */
export async function filesOfProject(db: Executor, projectId: number): Promise<Pick<FileRow, 'id' | 'name'>[]> {
  return db
    .selectFrom('quote_files')
    .select(['id', 'name'])
    .where('project_id', '=', projectId)
    .orderBy('name')
    .execute();
}

/** A phrase collection's strings in their order, with their descriptions and length limits. */
export async function collectionStrings(db: Executor, fileId: number) {
  return db
    .selectFrom('quote_strings')
    .select(['key', 'source', 'description', 'length_limit'])
    .where('file_id', '=', fileId)
    .orderBy('position')
    .execute();
}

/** The translations of a phrase collection's strings (those with text), by language then string order. */
export async function collectionTranslations(db: Executor, fileId: number) {
  return db
    .selectFrom('quote_translations as t')
    .innerJoin('quote_strings as s', 's.id', 't.string_id')
    .select(['t.locale', 's.key', 't.forms'])
    .where('s.file_id', '=', fileId)
    .where('t.is_empty', '=', 0)
    .orderBy('t.locale')
    .orderBy('s.position')
    .execute();
}
