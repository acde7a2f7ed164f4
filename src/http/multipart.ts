// Reading multipart/form-data bodies (a user's photo, the quotation API's uploads) so that every fault of
// the body is a client error in the service's shape: no boundary, a broken or truncated body and
// a wrong content type are 400/415, too many or too large parts 413. busboy and
// @fastify/multipart throw plain errors (a 500) or odd statuses (406) for most of these.
import type { MultipartValue } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { HttpError } from './errors.js';

export interface MultipartLimits {
  fileSize: number;
  files: number;
  fields: number;
  parts: number;
  /** Bytes of a text part's value. */
  fieldSize: number;
}

/** The client error that a failure while reading a multipart body stands for. */
export function multipartError(error: unknown, limits: MultipartLimits): unknown {
  if (error instanceof HttpError) return error;
  const { code, statusCode, message } = (error ?? {}) as { code?: string; statusCode?: number; message?: string };
  switch (code) {
    case 'FST_PARTS_LIMIT':
      return new HttpError(413, `The form has too many parts (at most ${limits.parts})`, { code: 'too_many_parts' });
    case 'FST_FILES_LIMIT':
      return new HttpError(413, `The form has too many files (at most ${limits.files})`, { code: 'too_many_parts' });
    case 'FST_FIELDS_LIMIT':
      return new HttpError(413, `The form has too many fields (at most ${limits.fields})`, { code: 'too_many_parts' });
    case 'FST_REQ_FILE_TOO_LARGE':
      return new HttpError(413, `A file is larger than ${limits.fileSize} bytes`, { code: 'part_too_large' });
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new HttpError(415, 'Expected a multipart/form-data body');
    case 'FST_PROTO_VIOLATION':
      return new HttpError(400, 'A part of the form has a reserved name');
    case 'FST_INVALID_JSON_FIELD_ERROR':
      return new HttpError(400, 'A part declared as application/json is not valid JSON');
  }
  if (statusCode !== undefined && statusCode >= 500) return error;
  // Everything else is busboy's verdict on the bytes sent, or the connection closing early.
  const text = String(message ?? '');
  if (/boundary|needle/i.test(text)) {
    return new HttpError(400, 'multipart/form-data needs a boundary parameter of 1 to 70 characters');
  }
  if (/end of|terminated early|closed before/i.test(text)) {
    return new HttpError(400, 'The multipart/form-data body is cut short: its closing boundary is missing');
  }
  return new HttpError(400, 'The multipart/form-data body is malformed');
}

/** Refuses a text part whose value busboy cut at fieldSize. */
export function refuseTruncated(part: MultipartValue, limits: MultipartLimits): void {
  if (part.valueTruncated) {
    const message = `The part "${part.fieldname.slice(0, 40)}" is larger than ${limits.fieldSize} bytes`;
    throw new HttpError(413, message, { code: 'part_too_large' });
  }
}

/**
 * Reads a whole multipart body as @fastify/multipart's attachFieldsToBody does (files kept in
 * memory, up to the limits the plugin was registered with) and returns its fields; any fault is
 * thrown as the client error it stands for.
 */
export async function readMultipartBody(request: FastifyRequest, limits: MultipartLimits): Promise<unknown> {
  let body: unknown = {};
  try {
    for await (const part of request.parts()) {
      body = part.fields;
      if (part.type === 'file') await part.toBuffer();
      else refuseTruncated(part, limits);
    }
  } catch (error) {
    throw multipartError(error, limits);
  }
  return body;
}
