// Export: a file with its translations in one language, written in the file pool's threads
// (file-worker.ts). This thread only reads the strings and hands them over as JSON batches.
// The multilingual file and the app store description are the same JSON tree writer's output for
// each language, and for every file of a project, put together here without parsing them again.
import type { Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { BATCH, PoolBusyError, type ExportRow, type FilePool } from './file-worker.js';
import { FORMATS, isFileFormat, type FileFormat } from '../formats/index.js';
import { safeName } from '../common/file-names.js';
import { findLanguage, type Language } from '../common/locales.js';
import { isAppDescriptionType } from '../projects/project-types.js';
import { filesOfProject, findFile, pluralFormsOf } from '../store/files.js';
import { targetLocales } from '../store/projects.js';
import type { FileRow, Project } from '../store/rows.js';
import { exportRows } from '../store/strings.js';

export interface ExportedFile {
  content: Buffer;
  /** Content type of the file's format. */
  mime: string;
  /** Safe for a Content-Disposition header. */
  name: string;
}

/** The JSON tree writer: nested objects of the strings by their key paths, untranslated ones left out. */
const TREE: FileFormat = 'HIERARCHICAL_JSON';

/** A file of the project by name, or a 400 naming the parameter (as OneSky answers an unknown file). */
async function requireFile(db: Database, project: Project, parameter: string, name: string): Promise<FileRow> {
  const file = await findFile(db.kysely, project.id, name);
  if (!file) throw new HttpError(400, `${parameter}: no file "${name.slice(0, 100)}" in project ${project.id}`);
  return file;
}

interface WriteRequest {
  project: Project;
  /** The files whose strings are written, one after another. */
  fileIds: number[];
  fileName: string;
  format: FileFormat;
  /** JSON: what the format's writer needs to write the file back. */
  meta: string;
  language: Language;
}

/** Writes strings in a format in one of the pool's threads; a 503 when too many exports are under way. */
async function writeStrings(db: Database, pool: FilePool, request: WriteRequest): Promise<Buffer> {
  const { project, fileIds, language } = request;
  const load = async () => {
    const batches: string[] = [];
    for (const fileId of fileIds) {
      for await (const rows of exportRows(db.kysely, db.dialect, fileId, language.code, BATCH)) {
        // Arrays, not objects: shorter JSON. A turn of the event loop between batches.
        const batch = rows.map((row): ExportRow => {
          const { key, context, source, source_plural: plural, forms, fuzzy, stale, previous } = row;
          return [key, context, source, plural, forms, fuzzy, stale, previous, row.description, row.length_limit];
        });
        batches.push(JSON.stringify(batch));
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    const pluralForms = fileIds.length === 1 ? await pluralFormsOf(db.kysely, fileIds[0], language.code) : null;
    return {
      format: request.format,
      batches,
      meta: request.meta,
      locale: language.code,
      sourceLocale: project.base_locale,
      fileName: request.fileName,
      isBase: language.code === project.base_locale,
      pluralForms,
    };
  };
  try {
    return await pool.write(load);
  } catch (error) {
    if (error instanceof PoolBusyError) throw new HttpError(503, error.message, { headers: { 'retry-after': '5' } });
    throw error;
  }
}

export async function exportFile(
  db: Database,
  pool: FilePool,
  project: Project,
  language: Language,
  sourceFileName: string,
  exportFileName?: string,
): Promise<ExportedFile> {
  const file = await requireFile(db, project, 'source_file_name', sourceFileName);
  const format = file.format;
  if (!isFileFormat(format)) throw new HttpError(500, `file ${file.name} has an unknown format`);
  const request = { project, fileIds: [file.id], fileName: file.name, format, meta: file.meta, language };
  const content = await writeStrings(db, pool, request);
  return { content, mime: FORMATS[format].mime, name: safeName(exportFileName || file.name) };
}

/**
 * I18NEXT_MULTILINGUAL_JSON: `{"<code>": {"translation": {…}}, …}` for the base language (the
 * source texts) and each target language of the project (its translations; untranslated strings
 * are left out, so i18next falls back), each language's tree as the JSON export writes it.
 */
export async function exportMultilingual(
  db: Database,
  pool: FilePool,
  project: Project,
  sourceFileName: string,
  exportFileName?: string,
): Promise<ExportedFile> {
  const file = await requireFile(db, project, 'source_file_name', sourceFileName);
  const codes = [project.base_locale, ...(await targetLocales(db.kysely, project.id))];
  const parts: Buffer[] = [];
  for (const [index, code] of codes.entries()) {
    const language = findLanguage(code)!;
    const request = { project, fileIds: [file.id], fileName: file.name, format: TREE, meta: '{}', language };
    const tree = await writeStrings(db, pool, request);
    parts.push(Buffer.from(`${index ? ',' : '{'}\n${JSON.stringify(code)}: {"translation": `), tree, Buffer.from('}'));
  }
  parts.push(Buffer.from('}\n'));
  return {
    content: Buffer.concat(parts),
    mime: 'application/json; charset=utf-8',
    name: safeName(exportFileName || file.name),
  };
}

/**
 * The app store description of a project of a `…-metadata` type in one language, as OneSky's
 * JSON: the strings of all its files as one tree (`APP_NAME`, `DESCRIPTION`, `APP_KEYWORD: {…}` as
 * uploaded), untranslated strings left out. Returns the tree's JSON text.
 */
export async function exportAppDescription(
  db: Database,
  pool: FilePool,
  project: Project,
  language: Language,
): Promise<Buffer> {
  if (!isAppDescriptionType(project.project_type)) {
    throw new HttpError(
      400,
      `project ${project.id} is no app store description project (its project_type is ` +
        `${project.project_type ?? 'not set'}; app descriptions are the …-metadata types of GET /1/project-types)`,
    );
  }
  const files = await filesOfProject(db.kysely, project.id);
  const fileIds = files.map((file) => file.id);
  return writeStrings(db, pool, {
    project,
    fileIds,
    fileName: 'app-description.json',
    format: TREE,
    meta: '{}',
    language,
  });
}
