// The original API (docs/tasks.md) leaves open whether GET and DELETE parameters travel in the
// query string or in a body: both are accepted. Fastify validates the query string; this merges an
// optional JSON body (read by hand for GET, whose body Fastify ignores) checked against the same
// schema.
import type { Static, TObject } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { fieldErrorsFromValidation, HttpError, type AjvError, type FieldError } from '../http/errors.js';
import { nestedDeeperThan, tooDeepError } from '../http/json-depth.js';
import { validatorCompiler } from '../http/validation.js';

const GET_BODY_LIMIT = 16 * 1024;
const compiled = new WeakMap<TObject, (value: unknown) => boolean>();

export function strictValidator(schema: TObject) {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = validatorCompiler({ schema, httpPart: 'body', method: 'GET', url: '' }) as (value: unknown) => boolean;
    compiled.set(schema, validate);
  }
  return validate as ((value: unknown) => boolean) & { errors?: AjvError[] };
}

/** Checks a body that the route could not declare to Fastify (multipart or optional bodies). */
export function validateBody<T extends TObject>(schema: T, value: unknown): Static<T> {
  if (value === undefined) {
    throw badInput([{ loc: ['body'], msg: 'A JSON or multipart body is required', type: 'missing' }]);
  }
  const check = strictValidator(schema);
  if (!check(value)) throw badInput(fieldErrorsFromValidation(check.errors ?? [], 'body'));
  return value as Static<T>;
}

export function badInput(fields: FieldError[]): HttpError {
  // Same shape as the framework's validation errors: per-field `errors`, no `code`.
  return new HttpError(400, fields.map((f) => `${f.loc.slice(1).join('.') || f.loc[0]}: ${f.msg}`).join('; '), {
    fields,
  });
}

/** The route's parameters from the query string and/or a JSON body; `required` must be present. */
export async function queryOrBody<T extends TObject, K extends keyof Static<T> & string = never>(
  request: FastifyRequest,
  schema: T,
  required: K[] = [],
): Promise<Static<T> & Required<Pick<Static<T>, K>>> {
  const query = (request.query ?? {}) as Record<string, unknown>;
  const body = request.method === 'GET' ? await readGetBody(request) : request.body;
  // No prototype: the names are the caller's (`merged.__proto__ = …` would replace a prototype).
  const merged: Record<string, unknown> = Object.assign(Object.create(null), query);
  if (body !== undefined && body !== null) {
    const validate = strictValidator(schema);
    if (!validate(body)) throw badInput(fieldErrorsFromValidation(validate.errors ?? [], 'body'));
    for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
      if (Object.hasOwn(query, name) && String(query[name]) !== String(value)) {
        throw badInput([
          {
            loc: ['body', name],
            msg: 'Given in both the query string and the body, with different values',
            type: 'conflict',
          },
        ]);
      }
      merged[name] = value;
    }
  }
  const missing = required.filter((name) => merged[name] === undefined);
  if (missing.length) {
    throw badInput(missing.map((name) => ({ loc: ['query', name], msg: 'Field required', type: 'missing' })));
  }
  return merged as Static<T> & Required<Pick<Static<T>, K>>;
}

async function readGetBody(request: FastifyRequest): Promise<unknown> {
  const { headers } = request;
  const length = headers['content-length'];
  if (headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) return undefined;
  if (!/^application\/json\s*(;|$)/i.test(headers['content-type'] ?? '')) {
    throw new HttpError(415, 'A body must be application/json');
  }
  if (Number(length) > GET_BODY_LIMIT) throw new HttpError(413, 'Request body is too large');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request.raw) {
    size += chunk.length;
    if (size > GET_BODY_LIMIT) throw new HttpError(413, 'Request body is too large');
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'Malformed JSON body', { code: 'malformed_json' });
  }
  // Read by hand, so not checked by the shared JSON parser: the same depth limit here.
  if (nestedDeeperThan(body)) throw tooDeepError();
  return body;
}
