// Screenshots (POST /1/projects/:project_id/screenshots): images of where a project's strings
// appear, each with tags (a string's key, the file it belongs to, and a rectangle in pixels). The
// image arrives as a base64 data URI in JSON or in a form; it is stored when its bytes are a raster
// image (the declared type is not trusted), under its name in the project: a screenshot sent again
// under the same name replaces the image and the tags. Tags are kept as sent; a key need not be
// uploaded yet (screenshots often come before the strings).
import { writeTransaction, type Database, type Executor } from '../db/index.js';
import { HttpError } from '../http/errors.js';
import { nestedDeeperThan } from '../http/json-depth.js';
import { pageMeta } from './paging.js';
import { isRecord } from './params.js';
import {
  countScreenshots,
  pageOfScreenshots,
  saveScreenshot,
  screenshotImage,
  tagsOf,
  type Project,
  type ScreenshotRow,
  type ScreenshotTag,
} from './store.js';
import { timeFields } from './time.js';

/** A screenshot as the route's schema has validated it. */
export interface ScreenshotInput {
  name: string;
  image: string;
  tags?: { key: string; x: number; y: number; width: number; height: number; file?: string | null }[];
}

const ascii = (bytes: Buffer, from: number, to: number) => bytes.subarray(from, to).toString('latin1');

// Raster images only, by their magic bytes: an SVG is a document that could carry script.
const SIGNATURES: { mime: string; test(bytes: Buffer): boolean }[] = [
  { mime: 'image/png', test: (b) => ascii(b, 0, 8) === '\x89PNG\r\n\x1a\n' },
  { mime: 'image/jpeg', test: (b) => b.length > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  { mime: 'image/gif', test: (b) => ['GIF87a', 'GIF89a'].includes(ascii(b, 0, 6)) },
  { mime: 'image/webp', test: (b) => ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 12) === 'WEBP' },
  { mime: 'image/bmp', test: (b) => b.length > 26 && ascii(b, 0, 2) === 'BM' },
  { mime: 'image/tiff', test: (b) => ['II*\x00', 'MM\x00*'].includes(ascii(b, 0, 4)) },
];

const DATA_URI = /^data:[^,]{0,200};base64,/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The image of a data URI (or of bare base64), or a 400/413 naming the parameter. */
export function decodeImage(parameter: string, text: string, maxBytes: number): { mime: string; bytes: Buffer } {
  const prefix = DATA_URI.exec(text);
  // Line breaks and spaces are allowed in base64 (PHP's chunk_split writes them).
  const base64 = (prefix ? text.slice(prefix[0].length) : text).replace(/\s+/g, '');
  if (!base64 || !BASE64.test(base64)) {
    throw new HttpError(400, `${parameter}: expected base64 image data, e.g. data:image/png;base64,iVBORw0…`);
  }
  // Refused by length before decoding, so an oversized value costs no memory.
  if (Math.floor((base64.length * 3) / 4) > maxBytes + 2) {
    throw new HttpError(413, `${parameter}: the image is larger than ${maxBytes} bytes (QUOTES_MAX_SCREENSHOT_BYTES)`);
  }
  const bytes = Buffer.from(base64, 'base64');
  const mime = SIGNATURES.find((signature) => signature.test(bytes))?.mime;
  if (!mime) throw new HttpError(400, `${parameter}: not a PNG, JPEG, GIF, WebP, BMP or TIFF image`);
  return { mime, bytes };
}

const INTEGER = /^\d{1,7}$/;
const COORDINATES = ['x', 'y', 'width', 'height'];

/**
 * preValidation of the upload: a form sends numbers as text (`screenshots[0][tags][0][x]=460`) and
 * may send the list itself as JSON text; both become what the JSON schema validates.
 */
export async function normalizeScreenshots(request: { body: unknown }): Promise<void> {
  if (!isRecord(request.body)) return;
  const body = request.body;
  if (typeof body.screenshots === 'string' && body.screenshots.trimStart().startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.screenshots);
    } catch {
      throw new HttpError(400, 'screenshots: neither a list of fields nor a JSON list');
    }
    if (nestedDeeperThan(parsed, 8)) throw new HttpError(400, 'screenshots: the JSON nests too deep');
    body.screenshots = parsed;
  }
  if (!Array.isArray(body.screenshots)) return;
  for (const screenshot of body.screenshots) {
    if (!isRecord(screenshot) || !Array.isArray(screenshot.tags)) continue;
    for (const tag of screenshot.tags) {
      if (!isRecord(tag)) continue;
      for (const name of COORDINATES) {
        const value = Object.hasOwn(tag, name) ? tag[name] : undefined;
        if (typeof value === 'string' && INTEGER.test(value)) tag[name] = Number(value);
      }
    }
  }
}

/** Stores the screenshots of one request together: every image is checked before any is stored. */
export async function saveScreenshots(db: Database, project: Project, inputs: ScreenshotInput[], maxBytes: number) {
  const decoded = inputs.map((input, i) => decodeImage(`screenshots[${i}].image`, input.image, maxBytes));
  const now = Date.now();
  const ids = await writeTransaction(db, async (trx) => {
    const stored: number[] = [];
    for (const [i, input] of inputs.entries()) {
      const { mime, bytes } = decoded[i];
      const tags: ScreenshotTag[] = (input.tags ?? []).map(({ key, x, y, width, height, file }) => {
        return { key, x, y, width, height, file_name: file || null };
      });
      const values = { project_id: project.id, name: input.name, mime, image: bytes, byte_count: bytes.length };
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
