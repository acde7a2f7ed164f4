// The one HTTP client of the tests: a request to a running server over a real socket, its answer
// read whole. For the status and body shape of an error, prefer `app.inject` (test/support/server.ts).

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

export async function request(url: string, method = 'GET', options: RequestOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let payload = options.body;
  if (options.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    payload = JSON.stringify(options.json);
  }
  const response = await fetch(url, { method, headers, body: payload });
  const bytes = Buffer.from(await response.arrayBuffer());
  const text = bytes.toString('utf8');
  const json = parseJson(text);
  const declaredJson = /json/.test(response.headers.get('content-type') ?? '');
  const body = declaredJson && json !== undefined ? json : text;
  return { status: response.status, headers: response.headers, body, json, text, bytes };
}

function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
