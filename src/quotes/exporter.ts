// Export: a file with its translations in one language, written in the file pool's threads
// (file-worker.ts). This thread only reads the strings and hands them over as JSON batches.
import type { Database } from '../db/index.js';
import { HttpError } from '../http/errors.js';
import { BATCH, PoolBusyError, type ExportRow, type FilePool } from './file-worker.js';
import { FORMATS, isFileFormat } from './formats/index.js';
import type { Language } from './locales.js';
import { exportRows, findFile, pluralFormsOf, type Project } from './store.js';

export interface ExportedFile {
  content: Buffer;
  /** Content type of the file's format. */
  mime: string;
  /** Safe for a Content-Disposition header. */
  name: string;
}

export async function exportFile(
  db: Database,
  pool: FilePool,
  project: Project,
  language: Language,
  sourceFileName: string,
  exportFileName?: string,
): Promise<ExportedFile> {
  const file = await findFile(db.kysely, project.id, sourceFileName);
  if (!file) {
    throw new HttpError(400, `source_file_name: no file "${sourceFileName.slice(0, 100)}" in project ${project.id}`);
  }
  const format = file.format;
  if (!isFileFormat(format)) throw new HttpError(500, `file ${file.name} has an unknown format`);
  const load = async () => {
    const batches: string[] = [];
    for await (const rows of exportRows(db.kysely, db.dialect, file.id, language.code, BATCH)) {
      // Arrays, not objects: shorter JSON. A turn of the event loop between batches.
      const batch = rows.map((row): ExportRow => {
        return [row.key, row.context, row.source, row.source_plural, row.forms, row.fuzzy, row.previous];
      });
      batches.push(JSON.stringify(batch));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const pluralForms = await pluralFormsOf(db.kysely, file.id, language.code);
    const isBase = language.code === project.base_locale;
    const { base_locale: sourceLocale } = project;
    const fileName = file.name;
    return { format, batches, meta: file.meta, locale: language.code, sourceLocale, fileName, isBase, pluralForms };
  };
  let content: Buffer;
  try {
    content = await pool.write(load);
  } catch (error) {
    if (error instanceof PoolBusyError) throw new HttpError(503, error.message, { headers: { 'retry-after': '5' } });
    throw error;
  }
  const name = (exportFileName || file.name).replace(/[^\w.\- ]/g, '_');
  return { content, mime: FORMATS[format].mime, name };
}
