// Files attached to a phrase collection (OneSky's resources/phrase_collection_attachment.md): an
// image or a document a translator may look at, stored as sent under its base name in the
// collection (a name sent again replaces the file), listed, downloaded and deleted by name.
import { writeTransaction, type Database, type Executor } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { baseName, fileNameProblem, safeName } from '../common/file-names.js';
import { pageMeta } from '../common/paging.js';
import { isRecord } from '../common/params.js';
import { timeFields } from '../common/time.js';
import {
  attachmentContent,
  countAttachments,
  deleteAttachment,
  pageOfAttachments,
  saveAttachment,
} from '../store/attachments.js';
import type { Project } from '../store/rows.js';
import { isFilePart, requireNamed, textOf } from './files.js';

const collectionOf = (db: Executor, project: Project, key: string) =>
  requireNamed(db, project, 'collections', 'collection_key', key);

/** Stores an upload (a multipart body already read) as an attachment of the collection `collection_key`. */
export async function uploadAttachment(
  db: Database,
  maxBytes: number,
  project: Project,
  form: unknown,
  queryString: unknown,
) {
  const body = isRecord(form) ? form : {};
  const query = isRecord(queryString) ? queryString : {};
  const file = body.file;
  if (!isFilePart(file)) throw new HttpError(400, 'file: a "file" part is required');
  const key = textOf(body, query, 'collection_key');
  if (!key) throw new HttpError(400, 'collection_key: required, the key of a phrase collection');
  const collection = await collectionOf(db.kysely, project, key);
  const name = baseName('file', String(file.filename ?? ''));
  const problem = fileNameProblem(name);
  if (problem) throw new HttpError(400, `file: ${problem}`);
  const content = await file.toBuffer();
  if (file.file?.truncated) {
    throw new HttpError(413, `file: larger than the limit of ${maxBytes} bytes (QUOTES_MAX_FILE_BYTES)`);
  }
  const now = Date.now();
  const values = { file_id: collection.id, name, content, byte_count: content.length, uploaded_at: now };
  await writeTransaction(db, (trx) => saveAttachment(trx, values));
  return { name, collection_attached_to: { key: collection.name }, ...timeFields('uploaded', now) };
}

/** A page of the project's attachments, with the `meta` paging fields. */
export async function listAttachments(db: Executor, project: Project, page: number, perPage: number) {
  const [total, rows] = await Promise.all([
    countAttachments(db, project.id),
    pageOfAttachments(db, project.id, perPage, (page - 1) * perPage),
  ]);
  const link = (n: number) => `/1/projects/${project.id}/phrase-collection-attachments?page=${n}&per_page=${perPage}`;
  return {
    meta: pageMeta({ page, perPage, total, link, prevPastEnd: false }),
    data: rows.map((row) => ({
      name: row.name,
      collection_attached_to: { key: row.collection },
      byte_count: row.byte_count,
      ...timeFields('uploaded', row.uploaded_at),
    })),
  };
}

/** An attachment's bytes and a name for its Content-Disposition, or a 404 naming the parameter. */
export async function downloadAttachment(db: Executor, project: Project, key: string, name: string) {
  const collection = await collectionOf(db, project, key);
  const found = await attachmentContent(db, collection.id, name);
  if (!found) throw new HttpError(404, `name: no attachment "${name.slice(0, 100)}" in phrase collection "${key}"`);
  return { name: safeName(found.name), content: Buffer.from(found.content) };
}

export async function removeAttachment(db: Executor, project: Project, key: string, name: string) {
  const collection = await collectionOf(db, project, key);
  if (!(await deleteAttachment(db, collection.id, name))) {
    throw new HttpError(404, `name: no attachment "${name.slice(0, 100)}" in phrase collection "${key}"`);
  }
  return { name, collection_attached_to: { key: collection.name } };
}
