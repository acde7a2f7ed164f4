// The one HTTP client of the tests: `request` to a running server over a real socket, `inject` into
// an app without a port (test/support/server.ts buildTestApp), both with the same answer, read whole.
// Prefer `inject` where a test checks only a status and a body shape.
import type { FastifyInstance, InjectOptions } from 'fastify';

export interface Answer {
  status: number;
  headers: Headers;
  /** The body parsed when the server says it is JSON (and it is), else its text. */
  body: any;
  /** The body parsed as JSON whatever its content type; undefined when it is not JSON. */
  json: any;
  text: string;
  bytes: Buffer;
}

export interface RequestOptions {
  /** Sent as `authorization: Bearer <token>`. */
  token?: string;
  /** Sent as a JSON body (with its content type unless `headers` names one). */
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
}

/** A running server's base URL (a request over a socket) or an app (injected). */
export type Target = string | FastifyInstance;

/** A request to `path` of `target`. */
export function send(target: Target, method: string, path: string, options?: RequestOptions): Promise<Answer> {
  return typeof target === 'string' ? request(target + path, method, options) : inject(target, path, method, options);
}

export async function request(url: string, method = 'GET', options: RequestOptions = {}): Promise<Answer> {
  const { headers, body } = encode(options);
  const response = await fetch(url, { method, headers, body });
  return answer(response.status, response.headers, Buffer.from(await response.arrayBuffer()));
}

/** The same request through `app.inject`: the body is encoded as fetch would (a FormData as multipart). */
export async function inject(
  app: FastifyInstance,
  path: string,
  method = 'GET',
  options: RequestOptions = {},
): Promise<Answer> {
  const { headers: given, body } = encode(options);
  // Normalized as fetch does (names lowercased, values trimmed), as a server behind a socket sees them.
  const headers = Object.fromEntries(new Headers(given));
  let payload: Buffer | undefined;
  if (body !== undefined) {
    const encoded = new Response(body);
    const type = encoded.headers.get('content-type');
    if (type) headers['content-type'] ??= type;
    payload = Buffer.from(await encoded.arrayBuffer());
  }
  const response = await app.inject({ method: method as InjectOptions['method'], url: path, headers, payload });
  const answerHeaders = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    for (const one of [value ?? []].flat()) answerHeaders.append(name, String(one));
  }
  return answer(response.statusCode, answerHeaders, response.rawPayload);
}

function encode(options: RequestOptions): { headers: Record<string, string>; body?: BodyInit } {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.json === undefined) return { headers, body: options.body };
  headers['content-type'] ??= 'application/json';
  return { headers, body: JSON.stringify(options.json) };
}

function answer(status: number, headers: Headers, bytes: Buffer): Answer {
  const text = bytes.toString('utf8');
  const json = parseJson(text);
  const declaredJson = /json/.test(headers.get('content-type') ?? '');
  return { status, headers, body: declaredJson && json !== undefined ? json : text, json, text, bytes };
}

function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
