import { PassThrough } from 'node:stream';
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  clientErrorHandler,
  errorHandlerFor,
  fieldErrorsFromValidation,
  oneSkyStyle,
  openAiStyle,
  problemStyle,
} from '../../src/http/errors.js';
import { validatorCompiler } from '../../src/http/validation.js';
import { errorStyleFor } from '../../src/services.js';
import { PG_ADMIN_URL, postgresAvailable } from '../support/databases.js';

function validate(schema: object, value: unknown, httpPart = 'body') {
  const check = validatorCompiler({ schema, httpPart, method: 'POST', url: '/' } as any) as any;
  return check(value) ? [] : fieldErrorsFromValidation(check.errors, httpPart);
}

describe('validation errors', () => {
  it('names every faulty field with FastAPI-style loc, msg and type', () => {
    const schema = {
      type: 'object',
      additionalProperties: false,
      required: ['email', 'age'],
      properties: { email: { type: 'string', maxLength: 5 }, age: { type: 'integer' } },
    };
    expect(validate(schema, { email: 'too long', age: '3', admin: true })).toEqual([
      { loc: ['body', 'admin'], msg: 'Unknown field', type: 'extra_forbidden' },
      { loc: ['body', 'email'], msg: 'String should have at most 5 characters', type: 'string_too_long' },
      { loc: ['body', 'age'], msg: 'Input should be a valid integer', type: 'integer_type' },
    ]);
    expect(validate(schema, {})).toEqual([
      { loc: ['body', 'email'], msg: 'Field required', type: 'missing' },
      { loc: ['body', 'age'], msg: 'Field required', type: 'missing' },
    ]);
  });

  it('coerces query strings but never JSON bodies', () => {
    const schema = { type: 'object', properties: { page: { type: 'integer' } } };
    expect(validate(schema, { page: '2' }, 'querystring')).toEqual([]);
    expect(validate(schema, { page: '2' }, 'body')).toHaveLength(1);
  });

  it('reports a value that matches no branch of a union once', () => {
    const schema = {
      type: 'object',
      properties: { id: { anyOf: [{ type: 'integer' }, { type: 'string', pattern: '^[a-z]+$' }] } },
    };
    expect(validate(schema, { id: '12ab' })).toEqual([
      { loc: ['body', 'id'], msg: 'Input does not match any of the allowed forms', type: 'union' },
    ]);
  });
});

describe('the path → area → shape mapping', () => {
  it.each([
    ['/api/tasks/1', problemStyle],
    ['/api', problemStyle],
    ['/%61pi/tasks', problemStyle], // the router decodes it to /api/tasks
    ['/1/projects?page=2', oneSkyStyle],
    ['/1', oneSkyStyle],
    ['http://example.test/1/projects', oneSkyStyle], // absolute-form request target
    ['/docs/index.html', problemStyle],
    ['/openapi/', problemStyle],
    ['/1x', openAiStyle],
    ['/apis/x', openAiStyle],
    ['/v1/chat/completions', openAiStyle],
    ['/healthz', openAiStyle],
    ['/', openAiStyle],
    ['/1/%zz', oneSkyStyle], // malformed percent-encoding: the raw path decides
  ])('%s', (url, style) => {
    expect(errorStyleFor(url)).toBe(style);
  });

  function clientError(code: string, rawPacket?: Buffer): string {
    const socket = new PassThrough();
    let written = '';
    socket.on('data', (chunk) => (written += chunk));
    const log = { trace: () => {} };
    clientErrorHandler(errorStyleFor).call({ log } as any, Object.assign(new Error(code), { code, rawPacket }), socket);
    socket.read();
    return written;
  }

  it("answers a request that timed out before its request line was read with 408 in the proxy node's shape", () => {
    const answer = clientError('ERR_HTTP_REQUEST_TIMEOUT');
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    const body = JSON.parse(answer.split('\r\n\r\n')[1]);
    const error = { message: expect.any(String), type: 'invalid_request_error', code: null };
    // No request was read, so no request_id; the rest is Routstr's envelope.
    expect(body).toEqual({ error, detail: { error } });
  });

  it('reads the area from the refused bytes when they hold the request line', () => {
    const answer = clientError('HPE_INVALID_HEADER_TOKEN', Buffer.from('GET /1/projects HTTP/1.1\r\nBad Header\r\n'));
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    const body = JSON.parse(answer.split('\r\n\r\n')[1]);
    expect(body).toEqual({ meta: { status: 400, message: 'Malformed HTTP request' }, data: {} });
  });
});

describe('a row deleted by a concurrent request', () => {
  // Found by the fuzz suite on PostgreSQL: an upload, an order or a login whose project or user
  // another request deleted meanwhile hit the foreign key and answered 500.
  async function foreignKeyErrors(): Promise<[string, unknown][]> {
    const sqlite = new Database(':memory:');
    sqlite.exec(
      'pragma foreign_keys = on; create table p (id integer primary key); create table c (p integer references p (id))',
    );
    const errors: [string, unknown][] = [['sqlite', catchError(() => sqlite.exec('insert into c values (1)'))]];
    if (postgresAvailable) {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      try {
        await client.query(
          'create temp table p (id integer primary key); create temp table c (p integer references p (id))',
        );
        errors.push(['postgres', await client.query('insert into c values (1)').catch((error: unknown) => error)]);
      } finally {
        await client.end();
      }
    }
    return errors;
  }

  it("answers 409 in the area's shape, not 500", async () => {
    for (const [database, error] of await foreignKeyErrors()) {
      const app = Fastify();
      app.setErrorHandler(errorHandlerFor(errorStyleFor));
      app.all('/*', async () => {
        throw error;
      });
      for (const [url, shape] of [
        ['/1/projects/1/orders', (body: any) => expect(body.meta.status).toBe(409)],
        ['/api/users/login', (body: any) => expect(body).toMatchObject({ status: 409, title: 'Conflict' })],
        ['/v1/chat/completions', (body: any) => expect(body.error).toMatchObject({ message: expect.any(String) })],
      ] as const) {
        const answer = await app.inject({ method: 'POST', url });
        expect(answer.statusCode, `${database} ${url}`).toBe(409);
        shape(answer.json());
      }
      await app.close();
    }
  });
});

describe.runIf(postgresAvailable)('a statement PostgreSQL gave up to break a deadlock', () => {
  // Found by the fuzz suite: a file deleted while an import wrote its strings answered 500.
  async function deadlockError(): Promise<unknown> {
    const setup = new pg.Client({ connectionString: PG_ADMIN_URL });
    await setup.connect();
    const table = `deadlock_${process.pid}_${Date.now()}`;
    await setup.query(
      `create table ${table} (id integer primary key, v integer); insert into ${table} values (1, 0), (2, 0)`,
    );
    const [a, b] = [
      new pg.Client({ connectionString: PG_ADMIN_URL }),
      new pg.Client({ connectionString: PG_ADMIN_URL }),
    ];
    await Promise.all([a.connect(), b.connect()]);
    try {
      await a.query('begin');
      await b.query('begin');
      await a.query(`update ${table} set v = 1 where id = 1`);
      await b.query(`update ${table} set v = 1 where id = 2`);
      // Each now waits for the other's row: PostgreSQL aborts one of them.
      const outcomes = await Promise.allSettled([
        a.query(`update ${table} set v = 2 where id = 2`),
        b.query(`update ${table} set v = 2 where id = 1`),
      ]);
      const failed = outcomes.find((outcome) => outcome.status === 'rejected');
      return (failed as PromiseRejectedResult).reason;
    } finally {
      await Promise.all([a.end(), b.end()]);
      await setup.query(`drop table ${table}`);
      await setup.end();
    }
  }

  it("answers 409 with Retry-After in the area's shape, not 500", async () => {
    const error = await deadlockError();
    expect((error as { code?: string }).code).toBe('40P01');
    const app = Fastify();
    app.setErrorHandler(errorHandlerFor(errorStyleFor));
    app.all('/*', async () => {
      throw error;
    });
    for (const url of ['/1/projects/1/files', '/api/tasks/1', '/v1/wallet/refund']) {
      const answer = await app.inject({ method: 'DELETE', url });
      expect(answer.statusCode, url).toBe(409);
      expect(answer.headers['retry-after']).toBe('1');
    }
    expect((await app.inject({ method: 'DELETE', url: '/1/projects/1/files' })).json().meta.status).toBe(409);
    await app.close();
  });
});

function catchError(run: () => void): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
