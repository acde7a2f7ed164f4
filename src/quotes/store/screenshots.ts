// SQL of screenshots, their images and their tags.
import type { Executor } from '../../db/index.js';
import type { QuoteScreenshotRow, QuoteScreenshotTagRow } from '../tables.js';
import { chunks } from './rows.js';

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
