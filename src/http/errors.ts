// The error conventions of the services (README.md, "Services, routes and error shapes"), as one
// mechanism: a service picks an ErrorStyle and installs `errorHandlerFor(style)`; routes throw HttpError.
//   problem  – users and tasks API: RFC 9457 application/problem+json, with per-field `errors`
//   fastapi  – proxy node input errors: {"detail":[{loc,msg,type}]} with status 422
//   openai   – proxy node billing/upstream errors: {"error":{message,type,code}}
//   onesky   – quotation API: {"meta":{"status","message"},"data":{}}
// Which one an answer takes depends on the path alone: src/services.ts hands the platform that one
// mapping (errorStylesByPrefix), and every error path, the framework's own included, goes through it.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { databaseOutage, isForeignKeyViolation, isTransactionConflict } from '../db/errors.js';
import { endAndLinger, lingeringError } from './edge.js';

export interface FieldError {
  /** Where the input lives: body, query, header, path, then the path into it. */
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly options: {
      code?: string;
      type?: string;
      fields?: FieldError[];
      headers?: Record<string, string>;
      /** The proxy node's `detail` as a plain string, where Routstr's clients compare it (else `{error}`). */
      detail?: string;
      extra?: Record<string, unknown>;
    } = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export interface ErrorStyle {
  /** Renders a non-validation error; `requestId` is the request's id, where the shape carries it. */
  render(
    status: number,
    message: string,
    error?: HttpError,
    requestId?: string,
  ): { body: unknown; contentType: string };
  /** Renders input errors; defaults to `render(400, …)` with the fields attached. */
  renderFields?(fields: FieldError[]): { status: number; body: unknown; contentType: string };
}

const STATUS_TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  425: 'Too Early',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
  507: 'Insufficient Storage',
};

export function statusTitle(status: number): string {
  return STATUS_TITLES[status] ?? 'Error';
}

export const problemStyle: ErrorStyle = {
  render: (status, message, error) => ({
    contentType: 'application/problem+json; charset=utf-8',
    body: {
      type: 'about:blank',
      title: statusTitle(status),
      status,
      detail: message,
      ...(error?.options.code ? { code: error.options.code } : {}),
      ...(error?.options.fields ? { errors: error.options.fields.map(toProblemField) } : {}),
      ...(error?.options.extra ?? {}),
    },
  }),
  renderFields: (fields) => ({
    status: 400,
    contentType: 'application/problem+json; charset=utf-8',
    body: {
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: fields.map((f) => `${fieldName(f)}: ${f.msg}`).join('; '),
      errors: fields.map(toProblemField),
    },
  }),
};

function fieldName(field: FieldError): string {
  const path = field.loc.slice(1);
  return path.length ? path.join('.') : String(field.loc[0]);
}

function toProblemField(field: FieldError) {
  return { field: fieldName(field), in: field.loc[0], message: field.msg, type: field.type };
}

/**
 * OpenAI's `{error:{message,type,code}}` and, for Routstr's clients, the same error under `detail`
 * (older ones read `detail.error.code`, or compare `detail` as a string) and `request_id`: the
 * envelope of Routstr's node (reference/proxy-node.md, "Routstr today").
 */
export const openAiStyle: ErrorStyle = {
  render: (status, message, error, requestId) => {
    const body = {
      message,
      type: error?.options.type ?? (status >= 500 ? 'api_error' : 'invalid_request_error'),
      code: error?.options.code ?? null,
      ...(error?.options.extra ?? {}),
    };
    return {
      contentType: 'application/json; charset=utf-8',
      body: {
        error: body,
        detail: error?.options.detail ?? { error: body },
        ...(requestId ? { request_id: requestId } : {}),
      },
    };
  },
  // FastAPI's shape for input errors, as the proxy node's clients expect (docs/proxy-wallet.md).
  renderFields: (fields) => ({ status: 422, contentType: 'application/json; charset=utf-8', body: { detail: fields } }),
};

export const oneSkyStyle: ErrorStyle = {
  render: (status, message, error) => ({
    contentType: 'application/json; charset=utf-8',
    body: { meta: { status, message, ...(error?.options.extra ?? {}) }, data: {} },
  }),
  renderFields: (fields) => ({
    status: 400,
    contentType: 'application/json; charset=utf-8',
    body: { meta: { status: 400, message: fields.map((f) => `${fieldName(f)}: ${f.msg}`).join('; ') }, data: {} },
  }),
};

/** The error shape of an answer to `url` (a request target, as sent), by the service its path belongs to. */
export type ErrorStyleFor = (url: string) => ErrorStyle;

/**
 * The mapping from a path to its error shape: the style of the prefix it is or lies below,
 * else `otherwise` (src/services.ts names the services' prefixes and styles).
 */
export function errorStylesByPrefix(
  prefixes: readonly (readonly [prefix: string, style: ErrorStyle])[],
  otherwise: ErrorStyle,
): ErrorStyleFor {
  return (url) => styleOfPath(url, prefixes) ?? otherwise;
}

function styleOfPath(url: string, prefixes: readonly (readonly [string, ErrorStyle])[]): ErrorStyle | undefined {
  // Repeated slashes are one, as the router reads them (ignoreDuplicateSlashes).
  let path = url
    .replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?]*/i, '')
    .split('?')[0]
    .replace(/\/{2,}/g, '/');
  try {
    // As the router sees it: %61pi is /api, but %2F stays a character of its segment.
    path = decodeURI(path);
  } catch {
    // malformed percent-encoding: the raw path decides
  }
  for (const [prefix, style] of prefixes) if (path === prefix || path.startsWith(`${prefix}/`)) return style;
  return undefined;
}

const CONTEXT_LOC: Record<string, string> = { body: 'body', querystring: 'query', headers: 'header', params: 'path' };

export interface AjvError {
  keyword: string;
  instancePath: string;
  /** The keyword's details (missingProperty, limit…): Ajv's, read by name and checked before use. */
  params: Record<string, unknown>;
  message?: string;
}

/** Turns Ajv errors into FastAPI-style field errors (`loc`, `msg`, `type`). */
export function fieldErrorsFromValidation(errors: AjvError[], context: string | undefined): FieldError[] {
  const where = CONTEXT_LOC[context ?? 'body'] ?? 'body';
  const seen = new Set<string>();
  const fields: FieldError[] = [];
  // A failed anyOf/oneOf also reports every branch's own complaint about the same value;
  // one message per value is clearer, so keep the union's error and drop the branches'.
  const unionPaths = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.instancePath);
  const isBranchError = (e: AjvError) =>
    e.keyword !== 'anyOf' &&
    e.keyword !== 'oneOf' &&
    e.keyword !== 'required' &&
    unionPaths.some((path) => e.instancePath === path);
  for (const error of errors) {
    if (isBranchError(error)) continue;
    const path = error.instancePath
      .split('/')
      .slice(1)
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
    let field: FieldError;
    switch (error.keyword) {
      case 'required':
        field = { loc: [where, ...path, String(error.params.missingProperty)], msg: 'Field required', type: 'missing' };
        break;
      case 'additionalProperties':
        field = {
          loc: [where, ...path, String(error.params.additionalProperty)],
          msg: 'Unknown field',
          type: 'extra_forbidden',
        };
        break;
      case 'type':
        field = {
          loc: [where, ...path],
          msg: `Input should be a valid ${error.params.type}`,
          type: `${error.params.type}_type`,
        };
        break;
      case 'enum': {
        const values = error.params.allowedValues;
        const allowed = (Array.isArray(values) ? values : []).map((v: unknown) => JSON.stringify(v));
        field = { loc: [where, ...path], msg: `Input should be one of ${allowed.join(', ')}`, type: 'enum' };
        break;
      }
      case 'anyOf':
      case 'oneOf':
        field = { loc: [where, ...path], msg: 'Input does not match any of the allowed forms', type: 'union' };
        break;
      case 'maxLength':
        field = {
          loc: [where, ...path],
          msg: `String should have at most ${error.params.limit} characters`,
          type: 'string_too_long',
        };
        break;
      // Pydantic's words, as the proxy node's FastAPI shape uses them.
      case 'maximum': {
        const msg = `Input should be less than or equal to ${error.params.limit}`;
        field = { loc: [where, ...path], msg, type: 'less_than_equal' };
        break;
      }
      case 'minimum': {
        const msg = `Input should be greater than or equal to ${error.params.limit}`;
        field = { loc: [where, ...path], msg, type: 'greater_than_equal' };
        break;
      }
      case 'minLength':
        field = {
          loc: [where, ...path],
          msg: `String should have at least ${error.params.limit} characters`,
          type: 'string_too_short',
        };
        break;
      default:
        field = {
          loc: [where, ...path],
          msg: error.message ? capitalize(error.message) : 'Invalid value',
          type: error.keyword,
        };
    }
    const key = JSON.stringify(field.loc) + field.type;
    if (seen.has(key)) continue;
    seen.add(key);
    fields.push(field);
  }
  return fields;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function send(
  reply: FastifyReply,
  status: number,
  rendered: { body: unknown; contentType: string },
  headers?: Record<string, string>,
) {
  if (headers) reply.headers(headers);
  return reply.code(status).type(rendered.contentType).send(JSON.stringify(rendered.body));
}

/** Renders an error for the request `reply` answers and sends it. */
function answer(reply: FastifyReply, style: ErrorStyle, error: HttpError) {
  const rendered = style.render(error.status, error.message, error, reply.request.id);
  return send(reply, error.status, rendered, error.options.headers);
}

/** Sends an error in the given style outside the error handler (e.g. from a hook). */
export function sendError(reply: FastifyReply, style: ErrorStyle, error: HttpError) {
  if (error.options.fields && style.renderFields && error.status === 422) {
    const rendered = style.renderFields(error.options.fields);
    return send(reply, rendered.status, rendered, error.options.headers);
  }
  return answer(reply, style, error);
}

/**
 * The error handler of a service: every failure leaves in that service's shape. Given the
 * mapping instead (the root scope: platform routes, local 404s), the path's service decides.
 */
export function errorHandlerFor(styleOrMapping: ErrorStyle | ErrorStyleFor) {
  return function handleError(
    this: unknown,
    error: FastifyError | HttpError,
    request: FastifyRequest,
    reply: FastifyReply,
  ) {
    const style = typeof styleOrMapping === 'function' ? styleOrMapping(request.url) : styleOrMapping;
    if (error instanceof HttpError) {
      if (error.status >= 500) request.log.error({ err: error }, error.message);
      return sendError(reply, style, error);
    }
    const fastifyError = error as FastifyError & { validationContext?: string };
    if (fastifyError.validation) {
      const fields = fieldErrorsFromValidation(fastifyError.validation as AjvError[], fastifyError.validationContext);
      if (style.renderFields) {
        const rendered = style.renderFields(fields);
        return send(reply, rendered.status, rendered);
      }
      return answer(reply, style, new HttpError(400, fields.map((f) => f.msg).join('; ')));
    }
    if (isForeignKeyViolation(error)) {
      // A row this request refers to was deleted by another one meanwhile (a project, a user):
      // the caller's request conflicts with that change.
      return answer(reply, style, new HttpError(409, 'A resource this request refers to was deleted meanwhile'));
    }
    if (isTransactionConflict(error)) {
      const message = 'This request collided with a concurrent change and was not completed; send it again';
      return answer(reply, style, new HttpError(409, message, { headers: { 'retry-after': '1' } }));
    }
    const outage = outageError(error);
    if (outage) {
      request.log.warn({ err: error }, outage.message);
      return answer(reply, style, outage);
    }
    const status = fastifyError.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return answer(reply, style, new HttpError(status, clientMessage(fastifyError)));
    }
    request.log.error({ err: error }, 'unhandled error');
    return answer(reply, style, new HttpError(500, 'Internal server error'));
  };
}

/** Seconds a caller is asked to wait while the database is away (Retry-After). */
const OUTAGE_RETRY_AFTER_S = '2';

/**
 * The answer to a request that failed because the database is gone or full (db/errors.ts), or
 * null: 503 (try again shortly) or 507 (try again once the operator freed space), with Retry-After.
 */
export function outageError(error: unknown): HttpError | null {
  const outage = databaseOutage(error);
  if (!outage) return null;
  const headers = { 'retry-after': outage === 'storage-full' ? '30' : OUTAGE_RETRY_AFTER_S };
  return outage === 'storage-full'
    ? new HttpError(507, 'The server is out of storage space; try again later', {
        code: 'insufficient_storage',
        type: 'api_error',
        headers,
      })
    : new HttpError(503, 'The database is unavailable; try again shortly', {
        code: 'database_unavailable',
        type: 'api_error',
        headers,
      });
}

function clientMessage(error: FastifyError): string {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'Request body is too large';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'Unsupported content type';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'Body cannot be empty when content-type is set to application/json';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return error.message;
    default:
      return error.statusCode === 400 && error instanceof SyntaxError ? 'Malformed JSON body' : error.message;
  }
}

const FRAMEWORK_MESSAGES = new Map([
  ['FST_ERR_BAD_URL', 'The URL is malformed: invalid percent-encoding'],
  ['FST_ERR_MAX_PARAM_LENGTH', 'A path parameter is too long'],
]);

/** Fastify's `frameworkErrors`: a URL the router cannot read, answered in the shape of the path's service. */
export function frameworkErrorHandler(errorStyleFor: ErrorStyleFor) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    reply.header('x-request-id', request.id);
    const status = error.statusCode ?? 500;
    if (status >= 500) request.log.error({ err: error }, 'router error');
    const message = FRAMEWORK_MESSAGES.get(error.code) ?? (status >= 500 ? 'Internal server error' : 'Bad request');
    return sendError(reply, errorStyleFor(request.url), new HttpError(status, message));
  };
}

const CLIENT_ERRORS = new Map<string | undefined, [number, string]>([
  ['ERR_HTTP_REQUEST_TIMEOUT', [408, 'The request took too long to arrive']],
  ['HPE_HEADER_OVERFLOW', [431, 'The request headers are too large']],
]);

/**
 * Answers on a bare socket (no request object exists) in the shape of `target`'s service, then
 * closes it once the client stops sending. An answer to HEAD has no body (the client reads none).
 */
function answerOnSocket(
  errorStyleFor: ErrorStyleFor,
  socket: Duplex,
  request: { method: string; target: string },
  status: number,
  message: string,
  headers = '',
) {
  const rendered = errorStyleFor(request.target).render(status, message);
  const body = JSON.stringify(rendered.body);
  endAndLinger(
    socket,
    `HTTP/1.1 ${status} ${statusTitle(status)}\r\nContent-Type: ${rendered.contentType}\r\n${headers}` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${request.method === 'HEAD' ? '' : body}`,
  );
}

/**
 * The server's `clientError` handler: HTTP that Node's parser refuses (unknown method, bad
 * request line, headers too large, too slow) gets an answer in the service's shape, read from the
 * request line when the refused bytes hold it (else the proxy node's, as for any path outside the
 * local prefixes), and the connection is closed.
 */
export function clientErrorHandler(errorStyleFor: ErrorStyleFor) {
  return function answerClientError(
    this: FastifyInstance,
    error: Error & { code?: string; rawPacket?: unknown },
    socket: Duplex,
  ) {
    // A reset connection has nobody to answer; one that has had its answer gets no second one.
    if (error.code === 'ECONNRESET' || socket.destroyed || lingeringError(socket, error.code)) return;
    this.log.trace({ err: error }, 'client error');
    const [status, message] = CLIENT_ERRORS.get(error.code) ?? [400, 'Malformed HTTP request'];
    const head = Buffer.isBuffer(error.rawPacket) ? error.rawPacket.subarray(0, 4096).toString('latin1') : '';
    const [, method = '', target = '/'] = /^([!-~]+) (\S+)/.exec(head) ?? [];
    answerOnSocket(errorStyleFor, socket, { method, target }, status, message);
  };
}

/** CONNECT never reaches the router (Node hands it to 'connect'): a 405 like any other method. */
export function answerConnect(allow: string, errorStyleFor: ErrorStyleFor) {
  const message = `Method CONNECT is not allowed; this server serves ${allow}`;
  return (request: IncomingMessage, socket: Duplex) =>
    answerOnSocket(
      errorStyleFor,
      socket,
      { method: 'CONNECT', target: request.url ?? '/' },
      405,
      message,
      `Allow: ${allow}\r\n`,
    );
}
