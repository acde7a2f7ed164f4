// Screenshots (POST /1/projects/:project_id/screenshots): images of where a project's strings
// appear, each with tags (a string's key, the file it belongs to, and a rectangle in pixels). The
// image arrives as a base64 data URI in JSON or in a form; it is stored when its bytes are a raster
// image (the declared type is not trusted; screenshot-reader.ts reads the body in a thread), under
// its name in the project: a screenshot sent again under the same name replaces the image and the
// tags. Tags are kept as sent; a key need not be uploaded yet (screenshots often come before the
// strings).
import { writeTransaction, type Database, type Executor } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { PoolBusyError, type FilePool } from '../jobs/file-worker.js';
import { pageMeta } from '../common/paging.js';
import type { DecodedScreenshot } from '../jobs/screenshot-reader.js';
import type { Project } from '../store/rows.js';
import {
  countScreenshots,
  pageOfScreenshots,
  saveScreenshot,
  screenshotImage,
  tagsOf,
  type ScreenshotRow,
  type ScreenshotTag,
} from '../store/screenshots.js';
import { timeFields } from '../common/time.js';

/** The body of an upload as the route's parsers keep it: the bytes, read in a thread. */
export interface RawScreenshotsBody {
  type: 'json' | 'form';
  bytes: Buffer;
}

/**
 * Reads an upload's body in the file pool (screenshot-reader.ts): its screenshots with their images
 * decoded, and the credentials it carries (as the form of onesky-utils does). A refused body is a
 * 4xx in OneSky's shape, an input error naming its fields.
 */
export async function readScreenshotsBody(pool: FilePool, body: RawScreenshotsBody | undefined, maxBytes: number) {
  let read;
  try {
    read = await pool.readScreenshots(body?.type ?? 'json', body?.bytes ?? new Uint8Array(0), maxBytes);
  } catch (error) {
    if (error instanceof PoolBusyError) throw new HttpError(503, error.message, { headers: { 'retry-after': '5' } });
    throw error;
  }
  if (!read.ok) throw new HttpError(read.status, read.message, read.fields ? { fields: read.fields } : {});
  return { ...read.credentials, screenshots: read.screenshots };
}

/** Stores the screenshots of one request together, in one transaction. */
export async function saveScreenshots(db: Database, project: Project, screenshots: DecodedScreenshot[]) {
  const now = Date.now();
  const ids = await writeTransaction(db, async (trx) => {
    const stored: number[] = [];
    for (const { name, mime, image, tags: given } of screenshots) {
      const tags: ScreenshotTag[] = given.map(({ key, x, y, width, height, file }) => {
        return { key, x, y, width, height, file_name: file || null };
      });
      const bytes = Buffer.from(image.buffer, image.byteOffset, image.byteLength);
      const values = { project_id: project.id, name, mime, image: bytes, byte_count: bytes.length };
      stored.push(await saveScreenshot(trx, { ...values, created_at: now, updated_at: now }, tags));
    }
    return stored;
  });
  return describe(db.kysely, project, await pageOfScreenshotsById(db.kysely, project, ids));
}

/** The stored rows of the screenshots just saved, in the order they were sent. */
async function pageOfScreenshotsById(db: Executor, project: Project, ids: number[]): Promise<ScreenshotRow[]> {
  const rows = await pageOfScreenshots(db, project.id, ids.length, 0, ids);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => byId.get(id)).filter((row): row is ScreenshotRow => row !== undefined);
}

/** The screenshots as the API shows them: each with its tags and the path of its image. */
async function describe(db: Executor, project: Project, rows: ScreenshotRow[]) {
  const tags = await tagsOf(
    db,
    rows.map((row) => row.id),
  );
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    mime: row.mime,
    byte_count: row.byte_count,
    image_url: `/1/projects/${project.id}/screenshots/${row.id}/image`,
    tags: (tags.get(row.id) ?? []).map(({ key, file_name: file, x, y, width, height }) => {
      return { key, file, x, y, width, height };
    }),
    ...timeFields('created', row.created_at),
    ...timeFields('updated', row.updated_at),
  }));
}

/** A page of the project's screenshots by name, with the `meta` paging fields. */
export async function listScreenshots(db: Executor, project: Project, page: number, perPage: number) {
  const [total, rows] = await Promise.all([
    countScreenshots(db, project.id),
    pageOfScreenshots(db, project.id, perPage, (page - 1) * perPage),
  ]);
  const link = (n: number) => `/1/projects/${project.id}/screenshots?page=${n}&per_page=${perPage}`;
  return {
    meta: pageMeta({ page, perPage, total, link, prevPastEnd: false }),
    data: await describe(db, project, rows),
  };
}

export async function requireScreenshotImage(db: Executor, project: Project, id: number) {
  const image = await screenshotImage(db, project.id, id);
  if (!image) throw new HttpError(404, `screenshot ${id} not found in project ${project.id}`);
  return image;
}
