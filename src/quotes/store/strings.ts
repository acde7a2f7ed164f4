// SQL of a file's strings and their translations: an import's bulk writes (SQLite), its COPY and merge
// (PostgreSQL), and an export's rows in file order.
import { sql, type Selectable } from 'kysely';
import { columnsOf, insertRows, updateRows, type Column } from '../../db/bulk.js';
import { copyRows, type CopyValue } from '../../db/copy.js';
import type { Dialect, Executor } from '../../db/index.js';
import type { QuoteStringRow, QuoteTranslationRow } from '../tables.js';
import { chunks } from './rows.js';

export type SourceString = Pick<
  Selectable<QuoteStringRow>,
  'id' | 'key' | 'source' | 'source_plural' | 'position' | 'word_count' | 'description' | 'length_limit'
>;

/** The strings of a file by key. */
export async function stringsByKey(db: Executor, fileId: number): Promise<Map<string, SourceString>> {
  const rows = await db
    .selectFrom('quote_strings')
    .select(['id', 'key', 'source', 'source_plural', 'position', 'word_count', 'description', 'length_limit'])
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
  description: 'text',
  length_limit: 'text',
});
const STRING_KEY: [Column<'quote_strings'>] = [{ name: 'id', type: 'bigint' }];
const CHANGED_SOURCE = STRING_COLUMNS.slice(3); // source … length_limit
const POSITION = columnsOf('quote_strings', { position: 'integer' });
const NOTES = columnsOf('quote_strings', { description: 'text', length_limit: 'text' });
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
 * - strings: file_id, key, context, source, source_plural, word_count, position, source_changed_at,
 *   description, length_limit;
 * - changedSources: id, source, source_plural, word_count, position, source_changed_at, description, length_limit;
 * - moves: id, position;
 * - changedNotes (a phrase collection's description or length limit, the source unchanged): id, description,
 *   length_limit;
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
  changedNotes: (db: Executor, dialect: Dialect, values: unknown[]) =>
    inSlices(values, 1 + NOTES.length, (rows) => updateRows(db, dialect, 'quote_strings', STRING_KEY, NOTES, rows)),
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
  description?: string | null;
  lengthLimit?: string | null;
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
    [
      'file_id',
      'key',
      'context',
      'source',
      'source_plural',
      'word_count',
      'source_changed_at',
      'description',
      'length_limit',
      'position',
    ],
    positioned(strings, (s) => [fileId, s.key, s.context, s.source, s.sourcePlural, s.words, at, ...notesOf(s)]),
  );
}

const notesOf = (s: StagedString) => [s.description ?? null, s.lengthLimit ?? null];

const STAGED_COLUMNS = [
  'key',
  'context',
  'source',
  'source_plural',
  'word_count',
  'description',
  'length_limit',
  'position',
];

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
      word_count integer not null, description text, length_limit text, position integer not null
    ) on commit drop`.execute(db);
  await copyRows(
    db,
    'quote_import_strings',
    STAGED_COLUMNS,
    positioned(strings, (s) => [s.key, s.context, s.source, s.sourcePlural, s.words, ...notesOf(s)]),
  );
  await sql`update quote_strings as s
    set source = v.source, source_plural = v.source_plural, word_count = v.word_count,
      position = v.position, source_changed_at = ${at}, description = v.description, length_limit = v.length_limit
    from quote_import_strings as v
    where s.file_id = ${fileId} and s.key = v.key
      and (s.source <> v.source or s.source_plural is distinct from v.source_plural)`.execute(db);
  // Unchanged sources keep their word count and clock; their position (and a phrase collection's
  // description and length limit) follow the upload.
  await sql`update quote_strings as s
    set position = v.position, description = v.description, length_limit = v.length_limit
    from quote_import_strings as v
    where s.file_id = ${fileId} and s.key = v.key
      and (s.position <> v.position or s.description is distinct from v.description
        or s.length_limit is distinct from v.length_limit)`.execute(db);
  if (deleteMissing) {
    await sql`delete from quote_strings as s
      where s.file_id = ${fileId}
        and not exists (select from quote_import_strings as v where v.key = s.key)`.execute(db);
  }
  // In file order, as on SQLite: new strings' ids follow their positions.
  await sql`insert into quote_strings
      (file_id, key, context, source, source_plural, word_count, position, source_changed_at, description, length_limit)
    select ${fileId}, v.key, v.context, v.source, v.source_plural, v.word_count, v.position, ${at},
      v.description, v.length_limit
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
    .select([
      's.key',
      's.context',
      's.source',
      's.source_plural',
      't.forms',
      't.fuzzy',
      't.stale',
      't.previous',
      's.description',
      's.length_limit',
    ])
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
  description: string | null;
  length_limit: string | null;
};
