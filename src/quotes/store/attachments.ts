// SQL of the files attached to phrase collections.
import type { Executor } from '../../db/index.js';
import type { QuoteCollectionAttachmentRow } from '../tables.js';

/** Stores an attachment under its name in the collection, replacing one of that name (one atomic upsert). */
export async function saveAttachment(db: Executor, values: Omit<QuoteCollectionAttachmentRow, 'id'>): Promise<void> {
  const { content, byte_count, uploaded_at } = values;
  await db
    .insertInto('quote_collection_attachments')
    .values(values)
    .onConflict((oc) => oc.columns(['file_id', 'name']).doUpdateSet({ content, byte_count, uploaded_at }))
    .execute();
}

/** The attachments of a project's collections (or of one), with each one's collection. */
function attachmentsOf(db: Executor, projectId: number) {
  return db
    .selectFrom('quote_collection_attachments as a')
    .innerJoin('quote_files as f', 'f.id', 'a.file_id')
    .where('f.project_id', '=', projectId);
}

export async function countAttachments(db: Executor, projectId: number): Promise<number> {
  const row = await attachmentsOf(db, projectId).select(db.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A page of a project's attachments (without their content), by collection then name. */
export async function pageOfAttachments(db: Executor, projectId: number, limit: number, offset: number) {
  return attachmentsOf(db, projectId)
    .select(['a.name', 'f.name as collection', 'a.byte_count', 'a.uploaded_at'])
    .orderBy('f.name')
    .orderBy('a.name')
    .limit(limit)
    .offset(offset)
    .execute();
}

/** The names of a collection's attachments. */
export async function attachmentNames(db: Executor, fileId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('quote_collection_attachments')
    .select('name')
    .where('file_id', '=', fileId)
    .orderBy('name')
    .execute();
  return rows.map((row) => row.name);
}

export async function attachmentContent(db: Executor, fileId: number, name: string) {
  return db
    .selectFrom('quote_collection_attachments')
    .select(['name', 'content'])
    .where((eb) => eb.and({ file_id: fileId, name }))
    .executeTakeFirst();
}

/** Deletes an attachment; false when there was none of that name. */
export async function deleteAttachment(db: Executor, fileId: number, name: string): Promise<boolean> {
  const deleted = await db
    .deleteFrom('quote_collection_attachments')
    .where((eb) => eb.and({ file_id: fileId, name }))
    .executeTakeFirst();
  return Number(deleted.numDeletedRows) > 0;
}
