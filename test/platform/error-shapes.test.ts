// Every answer, the framework's own included, is in the error shape of the area whose prefix
// the path has: /api → problem+json, /1 → OneSky's meta shape, /docs and /openapi →
// problem+json, every other path (the proxy's, /v1/…, platform routes) → the proxy node's
// {"error":{message,type,code}}. A table of areas × faults, on both databases.
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openForSuite } from '../support/lifecycle.js';
import { databaseKinds } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { writeModelsFile } from '../proxy/forward-helpers.js';
import { QUOTES_ENV } from '../quotes/helpers.js';

type Shape = 'problem' | 'onesky' | 'openai';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

const ENV = {
  ...QUOTES_ENV,
  SERVICES: 'proxy,tasks,quotes,docs',
  USERS_SCRYPT_N: '1024',
  PROXY_UPSTREAM_URL: 'http://127.0.0.1:9',
  PROXY_MINTS: 'http://127.0.0.1:9',
  PROXY_BTC_USD: '100000',
  PROXY_MAX_BODY_BYTES: '1024',
  BODY_LIMIT: '65536',
};
const start = (env: Record<string, string> = {}, kind: 'sqlite' | 'postgres' = 'sqlite') =>
  startTestServer(kind, { env: { ...ENV, PROXY_MODELS_FILE: writeModelsFile(), ...env } });

/** Speaks HTTP/1.1 with node:http, which sends any method, path and header as given. */
function send(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  const { hostname: host, port } = new URL(base);
  return new Promise<Answer>((resolve, reject) => {
    const options = { host, port, method, path, headers: { connection: 'close', ...headers }, agent: false };
    const req = httpRequest(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function expectShape(shape: Shape, answer: Answer, status: number) {
  const context = `${answer.status} ${answer.headers['content-type']} ${answer.text.slice(0, 300)}`;
  expect(answer.status, context).toBe(status);
  const type = String(answer.headers['content-type'] ?? '');
  const body = JSON.parse(answer.text);
  if (shape === 'problem') {
    expect(type, context).toMatch(/^application\/problem\+json/);
    const text = expect.any(String);
    expect(body, context).toMatchObject({ type: text, title: text, status, detail: text });
  } else if (shape === 'onesky') {
    expect(type, context).toMatch(/^application\/json/);
    expect(body, context).toEqual({ meta: { status, message: expect.any(String) }, data: {} });
  } else {
    expect(type, context).toMatch(/^application\/json/);
    // OpenAI's `error` inside Routstr's envelope: the same error under `detail`, and the request's
    // id where a request was read (a bare socket's answer has none).
    expect(['error', 'detail', 'request_id'], context).toEqual(expect.arrayContaining(Object.keys(body)));
    expect(body.error, context).toMatchObject({ message: expect.any(String), type: expect.any(String) });
    expect(body.error.code === null || typeof body.error.code === 'string', context).toBe(true);
    expect(body.detail, context).toEqual({ error: body.error });
    if (body.request_id !== undefined) expect(body.request_id, context).toBe(answer.headers['x-request-id']);
  }
  // Nothing of the framework's own bodies: no Fastify error codes or its default fields.
  expect(answer.text, context).not.toMatch(/FST_|"statusCode"/);
}

/** One path per area, and the shape its errors take. */
const AREAS: { area: string; path: string; shape: Shape }[] = [
  { area: 'users and tasks API /api', path: '/api/tasks', shape: 'problem' },
  { area: 'quotation API /1', path: '/1/projects', shape: 'onesky' },
  { area: 'viewer /docs', path: '/docs/index.html', shape: 'problem' },
  { area: '/openapi', path: '/openapi/tasks.json', shape: 'problem' },
  { area: 'proxy node /v1', path: '/v1/models', shape: 'openai' },
  { area: 'proxy node /', path: '/', shape: 'openai' },
  { area: 'platform /healthz', path: '/healthz', shape: 'openai' },
];

const UNUSUAL_METHODS = 'PROPFIND MKCOL LOCK SEARCH PURGE REPORT TRACE COPY MOVE UNLOCK PROPPATCH QUERY'.split(' ');

interface Ctx {
  token: string;
  projectId: number;
}

interface Case {
  name: string;
  shape: Shape;
  status: number;
  method: string;
  path: string | ((ctx: Ctx) => string);
  headers?: Record<string, string>;
  body?: string;
  /** Sends the bearer token of a user of the users and tasks API (the quotation API accepts it too). */
  auth?: boolean;
}

const json = { 'content-type': 'application/json' };
const bigJson = JSON.stringify({ name: 'x'.repeat(70_000) });
const below = (path: string, tail: string) => (path === '/' ? `/${tail}` : `${path}/${tail}`);

const GENERIC: Case[] = AREAS.flatMap(({ area, path, shape }) => [
  { name: `${area}: bad percent-encoding`, shape, status: 400, method: 'GET', path: below(path, '%zz') },
  { name: `${area}: method unknown to the HTTP parser`, shape, status: 400, method: 'FOO', path },
  { name: `${area}: header too large`, shape, status: 431, method: 'GET', path, headers: { 'x-big': 'a'.repeat(2e4) } },
  ...UNUSUAL_METHODS.map((method) => ({ name: `${area}: ${method}`, shape, status: 405, method, path })),
]);

const get = (name: string, shape: Shape, status: number, path: string): Case => {
  return { name, shape, status, method: 'GET', path };
};
const BODY_PATHS: { area: string; path: string; shape: Shape }[] = [
  { area: 'users and tasks API', path: '/api/users/register', shape: 'problem' },
  { area: 'quotation API', path: '/1/projects', shape: 'onesky' },
  { area: 'quotation API unknown path', path: '/1/nothing', shape: 'onesky' },
  { area: 'viewer', path: '/docs/upload', shape: 'problem' },
  { area: 'openapi', path: '/openapi/upload', shape: 'problem' },
];

const LOCAL: Case[] = [
  // Unknown routes under the local prefixes never go upstream.
  get('users and tasks API: unknown route', 'problem', 404, '/api/no/such/route'),
  get('quotation API: unknown route', 'onesky', 404, '/1/no/such/route'),
  // A base address ending in "/" (onesky-utils') doubles the slash: still the quotation API.
  get('quotation API: doubled slash', 'onesky', 404, '//1/no/such/route'),
  get('users and tasks API: doubled slash', 'problem', 404, '//api//no/such/route'),
  get('viewer: unknown file', 'problem', 404, '/docs/no/such/file.js'),
  get('openapi: unknown document', 'problem', 404, '/openapi/nothing.json'),
  // A path parameter longer than the router keeps matches no route.
  get('users and tasks API: path parameter too long', 'problem', 404, `/api/tasks/${'1'.repeat(600)}`),
  get('quotation API: path parameter too long', 'onesky', 404, `/1/projects/${'1'.repeat(600)}`),
  // Bodies refused while parsing, on routes and on unknown paths (parsed before the 404).
  ...BODY_PATHS.flatMap(({ area, path, shape }) =>
    [
      { fault: 'body too large', status: 413, type: 'application/json', body: bigJson },
      { fault: 'unsupported content type', status: 415, type: 'text/xml', body: '<x/>' },
      { fault: 'invalid content-type header', status: 415, type: ';;;', body: '{}' },
    ].map(({ fault, status, type, body }): Case => {
      const headers = { 'content-type': type };
      return { name: `${area}: ${fault}`, shape, status, method: 'POST', path, headers, body };
    }),
  ),
  {
    name: 'proxy node: billed body too large',
    shape: 'openai',
    status: 413,
    method: 'POST',
    path: '/v1/chat/completions',
    headers: json,
    body: bigJson,
  },
];

// Ids and pages past what a column holds: beyond 64 bits, past 2^53 (a JSON number), infinite.
const HUGE = ['99999999999999999999999', '9223372036854775808', '9007199254740993', '1e400'];
const inProject = (tail: string) => (c: Ctx) => `/1/projects/${c.projectId}/${tail}`;
const RANGES: Case[] = HUGE.flatMap((n): Case[] =>
  [
    { name: `users and tasks API: task id ${n}`, shape: 'problem' as Shape, method: 'GET', path: `/api/tasks/${n}` },
    { name: `users and tasks API: page ${n}`, shape: 'problem' as Shape, method: 'GET', path: `/api/tasks?page=${n}` },
    { name: `quotation API: project id ${n}`, shape: 'onesky' as Shape, method: 'GET', path: `/1/projects/${n}` },
    {
      name: `quotation API: project id ${n} (delete)`,
      shape: 'onesky' as Shape,
      method: 'DELETE',
      path: `/1/projects/${n}`,
    },
    {
      name: `quotation API: import id ${n}`,
      shape: 'onesky' as Shape,
      method: 'GET',
      path: inProject(`import-tasks/${n}`),
    },
    { name: `quotation API: order id ${n}`, shape: 'onesky' as Shape, method: 'GET', path: inProject(`orders/${n}`) },
    {
      name: `quotation API: files page ${n}`,
      shape: 'onesky' as Shape,
      method: 'GET',
      path: inProject(`files?page=${n}`),
    },
    {
      name: `quotation API: orders page ${n}`,
      shape: 'onesky' as Shape,
      method: 'GET',
      path: inProject(`orders?page=${n}`),
    },
  ].map((c) => ({ ...c, status: 400, auth: true })),
);

// Malformed multipart bodies on every multipart route: the users and tasks API's photo update
// and the quotation API's upload.
const BOUNDARY = 'XyZzY';
const form = (parts: string[], end = true) =>
  parts.map((part) => `--${BOUNDARY}\r\n${part}\r\n`).join('') + (end ? `--${BOUNDARY}--\r\n` : '');
const field = (name: string, value: string) => `Content-Disposition: form-data; name="${name}"\r\n\r\n${value}`;
const file = (name: string, content: string) =>
  `Content-Disposition: form-data; name="${name}"; filename="a.po"\r\n` +
  `Content-Type: application/octet-stream\r\n\r\n${content}`;

const MULTIPART_ROUTES = [
  {
    area: 'users and tasks API',
    method: 'PUT',
    path: () => '/api/users/update',
    shape: 'problem' as Shape,
    fileField: 'photo',
  },
  { area: 'quotation API', method: 'POST', path: inProject('files'), shape: 'onesky' as Shape, fileField: 'file' },
];
const MULTIPART: Case[] = MULTIPART_ROUTES.flatMap(({ area, method, path, shape, fileField }) =>
  (
    [
      ['without a boundary', 400, 'multipart/form-data', form([field('a', 'b')])],
      ['with an empty boundary', 400, 'multipart/form-data; boundary=', form([field('a', 'b')])],
      ['boundary of 300 characters', 400, `multipart/form-data; boundary=${'b'.repeat(300)}`, 'x'],
      ['cut short', 400, undefined, form([field('email', 'a@example.test'), file(fileField, 'msgid "a"\n')], false)],
      ['with a broken part header', 400, undefined, `--${BOUNDARY}\r\nno header line at all`],
      ['as multipart/mixed', 415, `multipart/mixed; boundary=${BOUNDARY}`, form([field('a', 'b')])],
      ['as octet-stream', 415, 'application/octet-stream', 'bytes'],
      ['with too many parts', 413, undefined, form(Array.from({ length: 40 }, (_, i) => field(`f${i}`, 'x')))],
      ['with too many files', 413, undefined, form([file(fileField, 'a'), file(fileField, 'b'), file(fileField, 'c')])],
      ['with an oversized text part', 413, undefined, form([field('password', 'p'.repeat(10_000))])],
    ] as const
  ).map(([fault, status, type, body]): Case => {
    const headers = { 'content-type': type ?? `multipart/form-data; boundary=${BOUNDARY}` };
    return {
      name: `${area}: multipart ${fault}`,
      shape,
      status,
      method,
      path,
      headers,
      body,
      auth: shape === 'onesky',
    };
  }),
);

const CASES: Case[] = [...GENERIC, ...LOCAL, ...RANGES, ...MULTIPART];

/** Sends `first` (then runs `between` and sends `second`) on one connection; collects all until it closes. */
function rawExchange(base: string, first: string, between?: () => void, second?: string): Promise<string> {
  const { hostname, port } = new URL(base);
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.on('data', (data) => (received += data.toString('latin1')));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
    socket.on('connect', async () => {
      socket.write(first);
      if (!between || second === undefined) return;
      await sleep(200);
      between();
      await sleep(200);
      socket.write(second);
    });
  });
}

/** The status, headers and body of a raw HTTP/1.1 answer. */
function parseAnswer(raw: string): Answer {
  const [head, text] = raw.split('\r\n\r\n');
  const lines = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.slice(1).map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  return { status: Number(lines[0].split(' ')[1]), headers, text };
}

describe.each(databaseKinds)('error shapes on %s', (kind) => {
  let server: TestServer;
  const ctx = {} as Ctx;
  beforeAll(async () => {
    server = await start({}, kind);
    const [email, password] = [`shapes-${kind}@example.test`, 'long password for shapes'];
    const person = { first_name: 'Ada', last_name: 'Shapes', email, username: `shapes_${kind}`, password };
    expect((await send(server.url, 'POST', '/api/users/register', json, JSON.stringify(person))).status).toBe(201);
    const login = await send(server.url, 'POST', '/api/users/login', json, JSON.stringify({ email, password }));
    ctx.token = JSON.parse(login.text).token;
    const bearer = { ...json, authorization: `Bearer ${ctx.token}` };
    const project = await send(server.url, 'POST', '/1/projects', bearer, JSON.stringify({ name: 'shapes' }));
    expect(project.status).toBe(201);
    ctx.projectId = JSON.parse(project.text).data.id;
  });
  afterAll(async () => {
    await server?.close();
  });

  const call = (c: Case) => {
    const path = typeof c.path === 'function' ? c.path(ctx) : c.path;
    const auth: Record<string, string> = c.auth ? { authorization: `Bearer ${ctx.token}` } : {};
    return send(server.url, c.method, path, { ...c.headers, ...auth }, c.body);
  };

  it.each(CASES)('$name → $status', async (c) => {
    expectShape(c.shape, await call(c), c.status);
  });

  it('a method no route serves lists the ones that are (Allow)', async () => {
    const answer = await send(server.url, 'PROPFIND', '/1/projects');
    expect(answer.headers.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
  });

  it.each([
    { target: 'example.com:443', shape: 'openai' as Shape },
    { target: '/1/projects', shape: 'onesky' as Shape },
    { target: '/api/tasks', shape: 'problem' as Shape },
  ])('CONNECT $target → 405 (Node hands it past the router)', async ({ target, shape }) => {
    const received = await rawExchange(server.url, `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
    expectShape(shape, parseAnswer(received), 405);
  });

  it('nothing is stored by a refused upload', async () => {
    const imports = server.db.kysely.selectFrom('quote_imports').select((eb) => eb.fn.countAll<number>().as('n'));
    const count = async () => Number((await imports.executeTakeFirstOrThrow()).n);
    const before = await count();
    for (const c of MULTIPART.filter((m) => m.name.startsWith('C:'))) await call(c);
    expect(await count()).toBe(before);
  });
});

describe('error shapes of a refused CORS preflight', () => {
  let server: TestServer;
  openForSuite(
    () => start({ CORS_ORIGINS: 'https://allowed.example' }),
    (opened) => (server = opened),
  );

  it.each(AREAS)('$area: 403 in its shape', async ({ path, shape }) => {
    const preflight = { origin: 'https://evil.example', 'access-control-request-method': 'POST' };
    const answer = await send(server.url, 'OPTIONS', path, preflight);
    expectShape(shape, answer, 403);
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('error shapes while shutting down', () => {
  it.each([
    { path: '/api/tasks', shape: 'problem' as Shape },
    { path: '/1/projects', shape: 'onesky' as Shape },
    { path: '/openapi/', shape: 'problem' as Shape },
    { path: '/v1/models', shape: 'openai' as Shape },
  ])('a request that arrives during the drain gets 503 in the shape of $path', async ({ path, shape }) => {
    const server = await start();
    try {
      // The first request is in flight (half its body sent) when the server starts closing;
      // the second, pipelined behind it on the same connection, arrives during the drain.
      const body = JSON.stringify({ email: 'nobody@example.test', password: 'not the password' });
      const head =
        'POST /api/users/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${body.length}\r\n\r\n`;
      let closed: Promise<void> | undefined;
      const received = await rawExchange(
        server.url,
        head + body.slice(0, 5),
        () => (closed = server.app.close()),
        `${body.slice(5)}GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`,
      );
      await closed;
      expectShape(shape, parseAnswer(received.slice(received.indexOf('HTTP/1.1', 10))), 503);
    } finally {
      await server.database.drop();
    }
  });
});
