// Reading a screenshot upload, in the file pool's threads (file-worker.ts): the body (JSON, or a
// form with nested names and numbers as text) is parsed, checked against the route's schema, and
// each base64 image decoded and recognized by its bytes. Parsing 10 MB of form or JSON and
// decoding its images took 50–200 ms on the request thread; here it holds up nothing. Pure: no
// database, so the threads need none.
import { Buffer } from 'node:buffer';
import { fieldErrorsFromValidation, type AjvError, type FieldError } from '../../http/errors.js';
import { parseForm } from '../../http/form.js';
import { baseName } from '../common/file-names.js';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../../http/json-depth.js';
import { validatorCompiler } from '../../http/validation.js';
import { ScreenshotsBody } from '../schemas.js';

export interface ScreenshotTagInput {
  key: string;
  x: number;
  y: number;
  width: number;
  height: number;
  file?: string | null;
}

/** A screenshot with its image decoded and its type recognized. */
export interface DecodedScreenshot {
  name: string;
  mime: string;
  image: Uint8Array;
  tags: ScreenshotTagInput[];
}

export type ScreenshotsRead =
  | { ok: true; credentials: Record<string, string>; screenshots: DecodedScreenshot[] }
  | { ok: false; status: number; message: string; fields?: FieldError[] };

/** A problem with the upload: its status and message travel back as a result. */
class Refused extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fields?: FieldError[],
  ) {
    super(message);
  }
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

/**
 * Base64 as Node's decoder reads it, which skips what is not base64: a decoded length short of what
 * the text's length promises means stray characters, and then the text must pass the full pattern
 * once spaces and line breaks are dropped (PHP's chunk_split writes them). The pattern is tried
 * only then: on 10 MB it took 90 ms, the decoding 1–10 ms.
 */
function decodeBase64(text: string): Buffer | null {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length === Buffer.byteLength(text, 'base64')) return bytes;
  const compact = text.replace(/\s+/g, '');
  return BASE64.test(compact) ? Buffer.from(compact, 'base64') : null;
}

/** The image of a data URI (or of bare base64), or a 400/413 naming the parameter. */
export function decodeImage(parameter: string, text: string, maxBytes: number): { mime: string; bytes: Buffer } {
  const prefix = DATA_URI.exec(text);
  const base64 = prefix ? text.slice(prefix[0].length) : text;
  // Refused by length before decoding, so an oversized value costs no memory.
  if (Math.floor((base64.length * 3) / 4) > maxBytes + 2) {
    throw new Refused(413, `${parameter}: the image is larger than ${maxBytes} bytes (QUOTES_MAX_SCREENSHOT_BYTES)`);
  }
  const bytes = base64.trim() ? decodeBase64(base64) : null;
  if (!bytes) throw new Refused(400, `${parameter}: expected base64 image data, e.g. data:image/png;base64,iVBORw0…`);
  const mime = SIGNATURES.find((signature) => signature.test(bytes))?.mime;
  if (!mime) throw new Refused(400, `${parameter}: not a PNG, JPEG, GIF, WebP, BMP or TIFF image`);
  return { mime, bytes };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
const INTEGER = /^\d{1,7}$/;
const COORDINATES = ['x', 'y', 'width', 'height'];

/**
 * A form sends numbers as text (`screenshots[0][tags][0][x]=460`) and may send the list itself as
 * JSON text; both become what the JSON schema validates.
 */
function normalizeForm(body: Record<string, unknown>): void {
  if (typeof body.screenshots === 'string' && body.screenshots.trimStart().startsWith('[')) {
    body.screenshots = parseJson('screenshots', body.screenshots);
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

function parseJson(parameter: string, text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Refused(400, `${parameter}: malformed JSON`);
  }
  if (nestedDeeperThan(value, MAX_JSON_DEPTH)) throw new Refused(400, `${parameter}: JSON nested too deep`);
  return value;
}

let validate: (((value: unknown) => boolean) & { errors?: AjvError[] }) | undefined;

function read(kind: 'json' | 'form', bytes: Uint8Array, maxBytes: number): ScreenshotsRead {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  let body: unknown;
  if (kind === 'form') {
    body = parseForm(text);
    normalizeForm(body as Record<string, unknown>);
  } else {
    body = text.trim() === '' ? {} : parseJson('body', text);
  }
  validate ??= validatorCompiler({ schema: ScreenshotsBody, httpPart: 'body', method: 'POST', url: '' }) as never;
  if (!validate!(body)) {
    const fields = fieldErrorsFromValidation(validate!.errors ?? [], 'body');
    throw new Refused(422, fields.map((f) => f.msg).join('; '), fields);
  }
  const valid = body as { screenshots: { name: string; image: string; tags?: ScreenshotTagInput[] }[] } & Record<
    string,
    unknown
  >;
  const credentials: Record<string, string> = Object.create(null);
  for (const name of ['api_key', 'timestamp', 'dev_hash']) {
    if (typeof valid[name] === 'string') credentials[name] = valid[name] as string;
  }
  const screenshots = valid.screenshots.map((screenshot, i) => {
    const { mime, bytes: image } = decodeImage(`screenshots[${i}].image`, screenshot.image, maxBytes);
    // A small Buffer may share Node's allocation pool: a copy of its own travels back.
    const name = baseName(`screenshots[${i}].name`, screenshot.name);
    return { name, mime, image: new Uint8Array(image), tags: screenshot.tags ?? [] };
  });
  return { ok: true, credentials, screenshots };
}

/** The task, in a worker thread: a refused upload is a result, not an exception (its class would not survive). */
export function readScreenshots(kind: 'json' | 'form', bytes: Uint8Array, maxBytes: number): ScreenshotsRead {
  try {
    return read(kind, bytes, maxBytes);
  } catch (error) {
    if (error instanceof Refused) {
      return { ok: false, status: error.status, message: error.message, fields: error.fields };
    }
    // The form reader's HttpErrors (malformed percent-encoding, too many fields) are client errors too.
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return { ok: false, status, message: (error as Error).message };
    }
    throw error;
  }
}
