// OneSky's phrase collections (resources/phrase_collection.md): named sets of strings sent as JSON
// instead of a file. Each collection is stored as a file of the PHRASE_COLLECTION format named by
// its key, so its strings count in quotations, translation status, orders and exports as a file's
// do; its strings keep their descriptions and length limits. An import queues one import task per
// collection (its words are counted in the file pool's threads, as an upload's).
import { Buffer } from 'node:buffer';
import type { Database, Executor } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { fileNameProblem } from '../common/file-names.js';
import { findLanguage } from '../common/locales.js';
import { pageMeta } from '../common/paging.js';
import { isRecord, readBoolean } from '../common/params.js';
import { timeFields } from '../common/time.js';
import { FormatError } from '../formats/index.js';
import { readCollection } from '../formats/phrase-collection.js';
import type { ImportQueue } from '../jobs/import-queue.js';
import { attachmentNames } from '../store/attachments.js';
import {
  collectionStrings,
  collectionTranslations,
  countFiles,
  deleteFile,
  findFile,
  pageOfFiles,
} from '../store/files.js';
import { COLLECTION_FORMAT, type Project } from '../store/rows.js';
import { queueImports, requireNamed, type NewUpload } from './files.js';

/** A page of the project's phrase collections by key, with the `meta` paging fields. */
export async function listCollections(db: Executor, project: Project, page: number, perPage: number) {
  const [total, rows] = await Promise.all([
    countFiles(db, project.id, 'collections'),
    pageOfFiles(db, project.id, 'collections', perPage, (page - 1) * perPage),
  ]);
  const link = (n: number) => `/1/projects/${project.id}/phrase-collections?page=${n}&per_page=${perPage}`;
  return {
    meta: pageMeta({ page, perPage, total, link, prevPastEnd: false }),
    data: rows.map((row) => ({ key: row.name, ...timeFields('created', row.created_at) })),
  };
}

/** A collection with its strings in the base language and their translations, as OneSky shows it. */
export async function showCollection(db: Executor, project: Project, key: string) {
  const file = await requireNamed(db, project, 'collections', 'collection_key', key);
  const [strings, translated, attachments] = await Promise.all([
    collectionStrings(db, file.id),
    collectionTranslations(db, file.id),
    attachmentNames(db, file.id),
  ]);
  // Null prototypes: keys from the data are never properties of an ordinary object.
  const base: Record<string, unknown> = Object.create(null);
  for (const { key: stringKey, source, description, length_limit: limit } of strings) {
    base[stringKey] = {
      string: source,
      ...(description ? { description } : {}),
      ...(limit ? { length_limit: JSON.parse(limit) as unknown } : {}),
    };
  }
  const translations: Record<string, Record<string, string>> = Object.create(null);
  for (const { locale, key: stringKey, forms } of translated) {
    if (!Object.hasOwn(translations, locale)) translations[locale] = Object.create(null);
    translations[locale][stringKey] = (JSON.parse(forms) as string[])[0];
  }
  const languages: Record<string, unknown> = Object.create(null);
  languages[project.base_locale] = base;
  return {
    key: file.name,
    base_language: languages,
    translations,
    attachments: attachments.map((name) => ({ name })),
    ...timeFields('created', file.created_at),
  };
}

/** The `collections` parameter: an object, or its JSON text (a form field). */
function collectionsOf(value: unknown): Record<string, unknown> {
  let collections = value;
  if (typeof value === 'string') {
    try {
      collections = JSON.parse(value);
    } catch (error) {
      throw new HttpError(400, `collections: not valid JSON (${(error as Error).message.slice(0, 100)})`);
    }
  }
  if (!isRecord(collections) || Array.isArray(collections)) {
    throw new HttpError(400, 'collections: required, an object of phrase collections by their key');
  }
  if (Object.keys(collections).length === 0) throw new HttpError(400, 'collections: holds no phrase collection');
  return collections;
}

/**
 * Creates or edits phrase collections: each one's strings are checked here (a 400 names the
 * first problem), then queued as the import of a PHRASE_COLLECTION file in the base language.
 * `is_keeping_all_strings` (default true) false: strings no longer in a collection are removed.
 */
export async function importCollections(
  db: Database,
  queue: ImportQueue,
  project: Project,
  params: { collections?: unknown; is_keeping_all_strings?: unknown },
) {
  const collections = collectionsOf(params.collections);
  const keepAll = readBoolean('is_keeping_all_strings', params.is_keeping_all_strings, true);
  const uploads: NewUpload[] = [];
  for (const [key, collection] of Object.entries(collections)) {
    const problem = fileNameProblem(key);
    if (problem) throw new HttpError(400, `collections: the key "${key.slice(0, 100)}" is refused: ${problem}`);
    try {
      readCollection(`collections.${key.slice(0, 100)}`, collection);
    } catch (error) {
      if (error instanceof FormatError) throw new HttpError(400, error.message);
      throw error;
    }
    const existing = await findFile(db.kysely, project.id, key);
    if (existing && existing.format !== COLLECTION_FORMAT) {
      throw new HttpError(400, `collections: a file named "${key.slice(0, 100)}" exists in project ${project.id}`);
    }
    const bytes = Buffer.from(JSON.stringify(collection));
    const locale = findLanguage(project.base_locale)!.code;
    uploads.push({ fileName: key, format: COLLECTION_FORMAT, locale, keepAll, allowSame: false, bytes, problem: null });
  }
  const imports = await queueImports(db, queue, project, uploads);
  // OneSky answers one import; each collection's is listed beside it, in the order sent.
  return { import: imports[0], imports: imports.map((queued, i) => ({ ...queued, key: uploads[i].fileName })) };
}

export async function deleteCollection(db: Executor, project: Project, key: string): Promise<void> {
  await deleteFile(db, (await requireNamed(db, project, 'collections', 'collection_key', key)).id);
}
