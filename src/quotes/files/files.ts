// The files of a project: an upload becomes an import task (run by jobs/import-queue.ts, applied by
// jobs/importer.ts); the list shows each file with its last import; deleting takes its strings along.
import type { MultipartFile } from '@fastify/multipart';
import { writeTransaction, type Database, type Executor } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { FILE_FORMATS, isFileFormat } from '../formats/index.js';
import type { ImportQueue } from '../jobs/import-queue.js';
import { baseName, fileNameProblem } from '../common/file-names.js';
import { findLanguage, requireLanguage, type Language } from '../common/locales.js';
import { pageMeta } from '../common/paging.js';
import { isRecord, readBoolean } from '../common/params.js';
import { progress } from '../projects/projects.js';
import { countFiles, deleteFile, filesWithCounts, findFile, pageOfFiles, type FileKind } from '../store/files.js';
import { countImports, findImport, insertImport, pageOfImports } from '../store/imports.js';
import { COLLECTION_FORMAT, type Project } from '../store/rows.js';
import { timeFields } from '../common/time.js';

type Fields = Record<string, unknown>;

export const isFilePart = (value: unknown): value is MultipartFile => isRecord(value) && Object.hasOwn(value, 'file');

/** A text parameter of an upload: a form part ({value}) or else the query string; '' counts as absent. */
export function textOf(body: Fields, query: Fields, name: string): string | undefined {
  const part =
    (Object.hasOwn(body, name) ? body[name] : undefined) ?? (Object.hasOwn(query, name) ? query[name] : undefined);
  const value = isRecord(part) && Object.hasOwn(part, 'value') ? part.value : part;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The status an import shows: queued and running are both in progress. */
const importStatus = (status: string | null) =>
  status === 'completed' || status === 'failed' ? status : ('in-progress' as const);

/**
 * Stores an upload (a multipart body already read) as an import task and wakes the queue. A name that climbs
 * out of its folder is a 400; other problems with the file itself (too large, no name) end as a failed import,
 * as with any unreadable file.
 */
export async function uploadFile(
  db: Database,
  queue: ImportQueue,
  maxFileBytes: number,
  project: Project,
  form: unknown,
  queryString: unknown,
) {
  const body = isRecord(form) ? form : {};
  const query = isRecord(queryString) ? queryString : {};
  const text = (name: string) => textOf(body, query, name);
  const file = body.file;
  if (!isFilePart(file)) throw new HttpError(400, 'file: a "file" part is required');
  const format = text('file_format');
  if (!format) throw new HttpError(400, 'file_format: required (one of ' + FILE_FORMATS.join(', ') + ')');
  if (!isFileFormat(format)) {
    throw new HttpError(
      400,
      `file_format: unknown format "${format.slice(0, 40)}" (one of ${FILE_FORMATS.join(', ')})`,
    );
  }
  const locale = text('locale');
  const language = locale ? requireLanguage('locale', locale) : findLanguage(project.base_locale)!;
  const keepAll = readBoolean('is_keeping_all_strings', text('is_keeping_all_strings'), true);
  const allowSameName = 'is_allow_translation_same_as_original';
  const allowSame = readBoolean(allowSameName, text(allowSameName), false);
  // Saved under its base name, as OneSky does: PHP's CURLFile and onesky-go send the whole path.
  const fileName = baseName('file', String(file.filename ?? ''));
  const bytes = await file.toBuffer();
  const problem = file.file?.truncated
    ? `the file is larger than the limit of ${maxFileBytes} bytes (QUOTES_MAX_FILE_BYTES)`
    : fileNameProblem(fileName);
  const [queued] = await queueImports(db, queue, project, [
    { fileName, format, locale: language.code, keepAll, allowSame, bytes, problem },
  ]);
  return { name: fileName, format, language, import: queued };
}

/** An upload on its way to the import queue. */
export interface NewUpload {
  fileName: string;
  format: string;
  locale: string;
  keepAll: boolean;
  allowSame: boolean;
  bytes: Buffer;
  /** A problem with the file itself: its import fails at once with this message. */
  problem: string | null;
}

/**
 * Stores uploads as import tasks (in one transaction) and wakes the queue; their ids and creation
 * time, as OneSky shows an import. An upload is kept, apart from its import row, until its import
 * ends (any process may run it).
 */
export async function queueImports(db: Database, queue: ImportQueue, project: Project, uploads: NewUpload[]) {
  const now = Date.now();
  const ids = await writeTransaction(db, async (trx) => {
    const ids: number[] = [];
    for (const { fileName, format, locale, keepAll, allowSame, bytes, problem } of uploads) {
      const values = {
        project_id: project.id,
        file_name: fileName.slice(0, 255),
        format,
        locale,
        keep_all_strings: keepAll ? 1 : 0,
        allow_same_as_original: allowSame ? 1 : 0,
        status: problem ? 'failed' : 'queued',
        message: problem,
        byte_count: bytes.length,
        string_count: null,
        word_count: null,
        attempts: 0,
        created_at: now,
        started_at: null,
        finished_at: problem ? now : null,
      };
      ids.push(await insertImport(trx, values, problem ? null : bytes));
    }
    return ids;
  });
  uploads.forEach(({ bytes, problem }, i) => {
    if (!problem) queue.kick({ importId: ids[i], payload: bytes });
  });
  return ids.map((id) => ({ id, ...timeFields('created', now) }));
}

export async function importTask(db: Executor, project: Project, id: number) {
  const job = await findImport(db, project.id, id);
  if (!job) throw new HttpError(404, `import ${id} not found in project ${project.id}`);
  const status = importStatus(job.status);
  return {
    id: job.id,
    file: { name: job.file_name, format: job.format, locale: findLanguage(job.locale)! },
    string_count: job.string_count,
    word_count: job.word_count,
    status,
    message: job.message,
    ...timeFields('created', job.created_at),
    ...timeFields('completed', status === 'completed' ? job.finished_at : null),
  };
}

/** The stored states an import status of the API stands for (queued and running are both in progress). */
const STORED_STATUSES = new Map<string, string[]>([
  ['completed', ['completed']],
  ['failed', ['failed']],
  ['in-progress', ['queued', 'running']],
]);

/** A page of the project's imports, newest first, in one status or all, with the `meta` paging fields. */
export async function listImportTasks(db: Executor, project: Project, status: string, page: number, perPage: number) {
  const statuses = STORED_STATUSES.get(status) ?? null; // 'all': no filter
  const [total, rows] = await Promise.all([
    countImports(db, project.id, statuses),
    pageOfImports(db, project.id, statuses, perPage, (page - 1) * perPage),
  ]);
  const link = (n: number) => `/1/projects/${project.id}/import-tasks?page=${n}&per_page=${perPage}&status=${status}`;
  return {
    meta: pageMeta({ page, perPage, total, link, prevPastEnd: false }),
    data: rows.map((row) => ({
      id: row.id,
      file: { name: row.file_name },
      status: importStatus(row.status),
      ...timeFields('created', row.created_at),
    })),
  };
}

/** A page of the project's files by name, with the `meta` paging fields. */
export async function listFiles(db: Executor, project: Project, page: number, perPage: number) {
  const [total, rows] = await Promise.all([
    countFiles(db, project.id, 'files'),
    pageOfFiles(db, project.id, 'files', perPage, (page - 1) * perPage),
  ]);
  const link = (n: number) => `/1/projects/${project.id}/files?page=${n}&per_page=${perPage}`;
  return {
    meta: pageMeta({ page, perPage, total, link, prevPastEnd: false }),
    data: rows.map((row) => ({
      name: row.name,
      file_format: row.format,
      string_count: row.string_count,
      word_count: row.word_count,
      last_import: row.last_import_id == null ? null : { id: row.last_import_id, status: importStatus(row.status) },
      ...timeFields('uploaded', row.uploaded_at),
    })),
  };
}

/** A file, or a phrase collection, of the project by name (each in its own list), else a 404 naming `parameter`. */
export async function requireNamed(db: Executor, project: Project, kind: FileKind, parameter: string, name: string) {
  const file = await findFile(db, project.id, name);
  if (!file || (file.format === COLLECTION_FORMAT) !== (kind === 'collections')) {
    const what = kind === 'collections' ? 'phrase collection' : 'file';
    throw new HttpError(404, `${parameter}: no ${what} "${name.slice(0, 100)}" in project ${project.id}`);
  }
  return file;
}

export async function removeFile(db: Executor, project: Project, name: string): Promise<void> {
  await deleteFile(db, (await requireNamed(db, project, 'files', 'file_name', name)).id);
}

/**
 * How far a file's translation into one language is: its approved and current strings (as the
 * project's languages count them); the base language is 100%, a language nothing was translated
 * into 0%. The counts are the file's.
 */
export async function translationStatus(db: Executor, project: Project, fileName: string, language: Language) {
  const [file] = await filesWithCounts(db, project.id, [fileName], language.code);
  if (!file) throw new HttpError(400, `file_name: no file "${fileName.slice(0, 100)}" in project ${project.id}`);
  const isBase = language.code === project.base_locale;
  return {
    file_name: file.name,
    locale: language,
    progress: isBase ? '100%' : progress(file.counts?.approved_strings ?? 0, file.string_count),
    string_count: file.string_count,
    word_count: file.word_count,
  };
}
