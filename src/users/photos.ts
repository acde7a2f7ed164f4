// Photos: PNG, JPEG, WebP and GIF only, recognized by their magic bytes (the declared type
// must agree), size-limited, stored in the database and served with nosniff.
import type { FastifyRequest } from 'fastify';
import { HttpError } from '../http/errors.js';
import { multipartError, refuseTruncated } from '../http/multipart.js';
import { badInput, validateBody } from './input.js';
import { MultipartUpdateFields, UpdateJsonBody } from './schemas.js';

const SIGNATURES: { type: string; test(bytes: Buffer): boolean }[] = [
  {
    type: 'image/png',
    test: (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  },
  { type: 'image/jpeg', test: (b) => b.length > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  { type: 'image/gif', test: (b) => ['GIF87a', 'GIF89a'].includes(b.subarray(0, 6).toString('latin1')) },
  {
    type: 'image/webp',
    test: (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
  },
];

export function sniffImage(bytes: Buffer): string | null {
  return SIGNATURES.find((signature) => signature.test(bytes))?.type ?? null;
}

/** The stored content type of a photo, or a 413/415 explaining why it is refused. */
export function checkPhoto(bytes: Buffer, declared: string | undefined, maxBytes: number): string {
  if (bytes.length === 0) throw badInput([{ loc: ['body', 'photo'], msg: 'The photo is empty', type: 'value_error' }]);
  if (bytes.length > maxBytes) {
    throw new HttpError(413, `The photo exceeds ${maxBytes} bytes`, { code: 'photo_too_large' });
  }
  const actual = sniffImage(bytes);
  if (!actual) {
    throw new HttpError(415, 'The photo must be a PNG, JPEG, WebP or GIF image', { code: 'unsupported_image' });
  }
  const claimed = declared?.toLowerCase().split(';')[0].trim().replace('image/jpg', 'image/jpeg');
  if (claimed && claimed !== actual) {
    throw new HttpError(415, `The photo is declared as ${claimed} but its content is ${actual}`, {
      code: 'image_type_mismatch',
    });
  }
  return actual;
}

/** Decodes `data:image/png;base64,…`. */
export function parseDataUrl(text: string, maxBytes: number): { declared: string; bytes: Buffer } {
  const match = /^data:([a-z]+\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]*={0,2})$/i.exec(text.trim());
  if (!match) {
    throw badInput([
      {
        loc: ['body', 'photo'],
        msg: 'Expected a base64 data URL such as data:image/png;base64,…',
        type: 'value_error',
      },
    ]);
  }
  // Refuse by length before decoding, so an oversized value costs no memory.
  if (Math.floor((match[2].length * 3) / 4) > maxBytes + 2) {
    throw new HttpError(413, `The photo exceeds ${maxBytes} bytes`, { code: 'photo_too_large' });
  }
  return { declared: match[1], bytes: Buffer.from(match[2], 'base64') };
}

export interface PhotoUpdate {
  email: string;
  password: string;
  /** Absent: remove the photo (JSON `photo: null`). */
  photo?: { bytes: Buffer; declared: string };
}

/** The update route's input, from multipart or JSON, validated like any body. */
export async function readPhotoUpdate(request: FastifyRequest, maxBytes: number): Promise<PhotoUpdate> {
  if (request.isMultipart()) {
    const { fields, photo } = await readMultipart(request, maxBytes);
    const { email, password } = validateBody(MultipartUpdateFields, fields);
    if (!photo) throw badInput([{ loc: ['body', 'photo'], msg: 'Field required (a file part)', type: 'missing' }]);
    return { email, password, photo };
  }
  const body = validateBody(UpdateJsonBody, request.body);
  return {
    email: body.email,
    password: body.password,
    photo: body.photo === null ? undefined : parseDataUrl(body.photo, maxBytes),
  };
}

interface MultipartUpdate {
  fields: Record<string, string>;
  photo?: { bytes: Buffer; declared: string };
}

/** Reads a multipart update: text fields and exactly one file part named `photo`. */
async function readMultipart(request: FastifyRequest, maxBytes: number): Promise<MultipartUpdate> {
  // Part names come from the caller: a null-prototype object holds them.
  const result: MultipartUpdate = { fields: Object.create(null) };
  const limits = { fileSize: maxBytes, files: 1, fields: 5, parts: 6, fieldSize: 4096 };
  try {
    for await (const part of request.parts({ limits })) {
      if (part.type === 'file') {
        if (part.fieldname !== 'photo') {
          part.file.resume();
          const msg = 'Unknown file field; the file goes in "photo"';
          throw badInput([{ loc: ['body', part.fieldname], msg, type: 'extra_forbidden' }]);
        }
        const bytes = await part.toBuffer().catch((error) => {
          if (error?.code !== 'FST_REQ_FILE_TOO_LARGE') throw error;
          throw new HttpError(413, `The photo exceeds ${maxBytes} bytes`, { code: 'photo_too_large' });
        });
        result.photo = { bytes, declared: part.mimetype };
      } else {
        refuseTruncated(part, limits);
        if (typeof part.value !== 'string') {
          throw badInput([{ loc: ['body', part.fieldname], msg: 'Expected text', type: 'string_type' }]);
        }
        result.fields[part.fieldname] = part.value;
      }
    }
  } catch (error) {
    // A malformed, truncated or oversized form is the caller's fault (400/413), not a 500.
    throw multipartError(error, limits);
  }
  return result;
}
