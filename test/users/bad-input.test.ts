// Table-driven bad input: each case gets a clear 4xx in problem+json, naming the field where
// there is one, and leaves nothing half-written. The cases go through app.inject: no port needed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import {
  type Account,
  call,
  dataUrl,
  IMAGES,
  newPerson,
  registerAndLogin,
  startTasksServerWithAdmin,
  type TestServer,
} from './helpers.js';

const PHOTO_MAX = 4096;

interface Case {
  name: string;
  method: string;
  path: string | ((ctx: Ctx) => string);
  as?: 'user' | 'admin';
  json?: unknown | ((ctx: Ctx) => unknown);
  raw?: { body: string | Buffer; type?: string };
  form?: (ctx: Ctx) => FormData;
  status: number;
  /** A field named in `errors`. */
  field?: string;
  code?: string;
}

interface Ctx {
  user: Account;
  admin: Account;
  taskId: string;
}

const person = newPerson('bad');
const reg = (patch: Record<string, unknown>) => ({ ...person, ...patch });
const without = (name: string) => Object.fromEntries(Object.entries(person).filter(([key]) => key !== name));
const update = (ctx: Ctx, photo: unknown) => ({ email: ctx.user.email, password: ctx.user.password, photo });
function form(ctx: Ctx, parts: [string, string | Blob, string?][]): FormData {
  const data = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === 'string') data.append(name, value);
    else data.append(name, value, filename);
  }
  return data;
}

/** A registration refused with 400, naming `field`. */
const registration = (name: string, json: unknown, field: string): Case => ({
  name,
  method: 'POST',
  path: '/api/users/register',
  json,
  status: 400,
  field,
});
/** A task creation by the user refused with 400, naming `field`. */
const newTask = (name: string, json: unknown, field: string): Case => ({
  name,
  method: 'POST',
  path: '/api/tasks/create',
  as: 'user',
  json,
  status: 400,
  field,
});
/** An update of the user's task refused with 400, naming `field` where given. */
const taskUpdate = (name: string, json: unknown, field?: string): Case => ({
  name,
  method: 'PATCH',
  path: (c) => `/api/tasks/${c.taskId}`,
  as: 'user',
  json,
  status: 400,
  ...(field && { field }),
});
/** A multipart photo update with the user's own credentials and `parts`. */
const updateForm = (ctx: Ctx, parts: [string, string | Blob, string?][]) =>
  form(ctx, [['email', ctx.user.email], ['password', ctx.user.password], ...parts]);

const CASES: Case[] = [
  // register
  { name: 'malformed JSON', method: 'POST', path: '/api/users/register', raw: { body: '{"email": ' }, status: 400 },
  { name: 'empty JSON body', method: 'POST', path: '/api/users/register', raw: { body: '' }, status: 400 },
  { name: 'JSON array body', method: 'POST', path: '/api/users/register', json: [person], status: 400 },
  {
    name: 'text body',
    method: 'POST',
    path: '/api/users/register',
    raw: { body: 'hello', type: 'text/plain' },
    status: 415,
  },
  {
    name: 'prototype pollution attempt',
    method: 'POST',
    path: '/api/users/register',
    raw: { body: `{"__proto__":{"role":"admin"},"email":"${person.email}"}` },
    status: 400,
  },
  {
    name: 'multipart where JSON is expected',
    method: 'POST',
    path: '/api/users/register',
    form: (c) => form(c, [['email', person.email]]),
    status: 400,
  },
  {
    name: 'oversized body',
    method: 'POST',
    path: '/api/users/register',
    json: reg({ first_name: 'x'.repeat(2 * 1024 * 1024) }),
    status: 413,
  },
  registration('missing username', without('username'), 'username'),
  registration('unknown field', reg({ is_admin: true }), 'is_admin'),
  registration('email of wrong type', reg({ email: 5 }), 'email'),
  registration('invalid email', reg({ email: 'not-an-email' }), 'email'),
  registration('blank first name', reg({ first_name: '   ' }), 'first_name'),
  registration('username with spaces', reg({ username: 'a b c' }), 'username'),
  registration('short password', reg({ password: 'Ab1!xyz' }), 'password'),
  registration('common password', reg({ password: 'qwertyuiop' }), 'password'),
  registration('password of 129 characters', reg({ password: 'x'.repeat(64) + 'y'.repeat(65) }), 'password'),
  registration(
    'password equal to the username',
    reg({ username: 'longusername1', password: 'LongUsername1' }),
    'password',
  ),
  // login
  {
    name: 'login password as number',
    method: 'POST',
    path: '/api/users/login',
    json: { email: person.email, password: 12345678 },
    status: 400,
    field: 'password',
  },
  {
    name: 'login without password',
    method: 'POST',
    path: '/api/users/login',
    json: { email: person.email },
    status: 400,
    field: 'password',
  },
  // tokens
  { name: 'forged bearer token', method: 'GET', path: '/api/tasks', raw: { body: '' }, status: 401 },
  // find / delete / getimage
  { name: 'find without id', method: 'GET', path: '/api/users/find', as: 'user', status: 400, field: 'id' },
  { name: 'find with id=abc', method: 'GET', path: '/api/users/find?id=abc', as: 'user', status: 400, field: 'id' },
  { name: 'find with id=0', method: 'GET', path: '/api/users/find?id=0', as: 'user', status: 400, field: 'id' },
  {
    name: 'find with unknown query parameter',
    method: 'GET',
    path: (c) => `/api/users/find?id=${c.user.id}&role=admin`,
    as: 'user',
    status: 400,
    field: 'role',
  },
  { name: 'find an unknown id (admin)', method: 'GET', path: '/api/users/find?id=999999', as: 'admin', status: 404 },
  {
    name: 'delete with id in query and body disagreeing',
    method: 'DELETE',
    path: (c) => `/api/users/delete?id=${c.user.id}`,
    as: 'user',
    json: { id: 999 },
    status: 400,
    field: 'id',
  },
  {
    name: 'delete with unknown body field',
    method: 'DELETE',
    path: '/api/users/delete',
    as: 'user',
    json: { id: 1, cascade: false },
    status: 400,
    field: 'cascade',
  },
  {
    name: 'delete with id of wrong type',
    method: 'DELETE',
    path: '/api/users/delete',
    as: 'user',
    json: { id: true },
    status: 400,
    field: 'id',
  },
  {
    name: 'getimage with invalid email',
    method: 'GET',
    path: '/api/users/getimage?email=nope',
    as: 'user',
    status: 400,
    field: 'email',
  },
  {
    name: 'getimage of a user without photo',
    method: 'GET',
    path: (c) => `/api/users/getimage?email=${c.admin.email}`,
    as: 'user',
    status: 404,
  },
  {
    name: 'all with limit=1000',
    method: 'GET',
    path: '/api/users/all?limit=1000',
    as: 'admin',
    status: 400,
    field: 'limit',
  },
  // forgotpassword
  {
    name: 'reset without proof',
    method: 'PUT',
    path: '/api/users/forgotpassword',
    json: { email: person.email, password: 'new password words' },
    status: 400,
    field: 'token',
  },
  {
    name: 'reset with a forged code',
    method: 'PUT',
    path: '/api/users/forgotpassword',
    json: { email: person.email, password: 'new password words', token: 'A'.repeat(43) },
    status: 400,
    code: 'invalid_reset_token',
  },
  {
    name: 'reset with both proofs',
    method: 'PUT',
    path: '/api/users/forgotpassword',
    json: { email: person.email, password: 'new password words', token: 'x', current_password: 'y' },
    status: 400,
    field: 'current_password',
  },
  {
    name: 'reset request with unknown field',
    method: 'POST',
    path: '/api/users/forgotpassword/request',
    json: { email: person.email, password: 'x' },
    status: 400,
    field: 'password',
  },
  // photo update
  {
    name: 'photo that is not a data URL',
    method: 'PUT',
    path: '/api/users/update',
    json: (c: Ctx) => update(c, 'hello'),
    status: 400,
    field: 'photo',
  },
  {
    name: 'photo of type text/plain',
    method: 'PUT',
    path: '/api/users/update',
    json: (c: Ctx) => update(c, dataUrl('text/plain', Buffer.from('hello world'))),
    status: 415,
  },
  {
    name: 'photo declared PNG holding a GIF',
    method: 'PUT',
    path: '/api/users/update',
    json: (c: Ctx) => update(c, dataUrl('image/png', IMAGES.gif)),
    status: 415,
    code: 'image_type_mismatch',
  },
  {
    name: 'photo that is HTML in disguise',
    method: 'PUT',
    path: '/api/users/update',
    json: (c: Ctx) => update(c, dataUrl('image/png', Buffer.from('<script>alert(1)</script>'))),
    status: 415,
  },
  {
    name: 'photo too large (JSON)',
    method: 'PUT',
    path: '/api/users/update',
    json: (c: Ctx) => update(c, dataUrl('image/png', Buffer.concat([IMAGES.png, Buffer.alloc(PHOTO_MAX)]))),
    status: 413,
  },
  {
    name: 'photo as a number',
    method: 'PUT',
    path: '/api/users/update',
    json: (c: Ctx) => update(c, 42),
    status: 400,
    field: 'photo',
  },
  {
    name: 'photo too large (multipart)',
    method: 'PUT',
    path: '/api/users/update',
    status: 413,
    form: (c) =>
      updateForm(c, [['photo', new Blob([IMAGES.png, Buffer.alloc(PHOTO_MAX)], { type: 'image/png' }), 'big.png']]),
  },
  {
    name: 'multipart without the photo',
    method: 'PUT',
    path: '/api/users/update',
    status: 400,
    field: 'photo',
    form: (c) => updateForm(c, []),
  },
  {
    name: 'multipart with an unknown field',
    method: 'PUT',
    path: '/api/users/update',
    status: 400,
    field: 'role',
    form: (c) =>
      updateForm(c, [
        ['role', 'admin'],
        ['photo', new Blob([IMAGES.png], { type: 'image/png' }), 'a.png'],
      ]),
  },
  {
    name: 'multipart file under another name',
    method: 'PUT',
    path: '/api/users/update',
    status: 400,
    field: 'avatar',
    form: (c) => updateForm(c, [['avatar', new Blob([IMAGES.png], { type: 'image/png' }), 'a.png']]),
  },
  // tasks
  newTask('task without title', { description: 'x' }, 'title'),
  newTask('task with blank title', { title: '  ' }, 'title'),
  newTask('task title of 201 characters', { title: 'x'.repeat(201) }, 'title'),
  newTask('task description as number', { title: 't', description: 5 }, 'description'),
  newTask('task user that is no id', { title: 't', user: 'somebody' }, 'user'),
  newTask('task user JSON without id', { title: 't', user: '{"name":"x"}' }, 'user'),
  newTask('task with mass-assigned done', { title: 't', done: true }, 'done'),
  {
    name: 'task for an unknown user (admin)',
    method: 'POST',
    path: '/api/tasks/create',
    as: 'admin',
    json: { title: 't', user: '999999' },
    status: 404,
  },
  taskUpdate('task update with nothing', {}),
  taskUpdate('task update done="yes"', { done: 'yes' }, 'done'),
  taskUpdate('task update of owner', { user: '1' }, 'user'),
  { name: 'task id that is no number', method: 'GET', path: '/api/tasks/abc', as: 'user', status: 400, field: 'id' },
  { name: 'unknown task', method: 'GET', path: '/api/tasks/999999', as: 'user', status: 404 },
  { name: 'delete unknown task', method: 'DELETE', path: '/api/tasks/delete?id=999999', as: 'user', status: 404 },
  {
    name: 'delete task with id=-1',
    method: 'DELETE',
    path: '/api/tasks/delete?id=-1',
    as: 'user',
    status: 400,
    field: 'id',
  },
  {
    name: 'list with done=maybe',
    method: 'GET',
    path: '/api/tasks?done=maybe',
    as: 'user',
    status: 400,
    field: 'done',
  },
  { name: 'unknown route under /api', method: 'GET', path: '/api/users/nothing', status: 404 },
];

describe.each(databaseKinds)('bad input on %s', (kind) => {
  let server: TestServer;
  const ctx = {} as Ctx;
  beforeAll(async () => {
    ({ server, admin: ctx.admin } = await startTasksServerWithAdmin(kind, {
      USERS_PHOTO_MAX_BYTES: String(PHOTO_MAX),
    }));
    ctx.user = await registerAndLogin(server.url, 'baduser');
    ctx.taskId = (
      await call(server.url, 'POST', '/api/tasks/create', { token: ctx.user.token, json: { title: 'mine' } })
    ).body.task.id;
  });
  afterAll(async () => {
    await server?.close();
  });

  it.each(CASES)('$name → $status', async (c) => {
    const usersBefore = await server.db.kysely
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const token =
      c.as === 'admin'
        ? ctx.admin.token
        : c.as === 'user'
          ? ctx.user.token
          : c.name.startsWith('forged')
            ? 'A'.repeat(43)
            : undefined;
    const path = typeof c.path === 'function' ? c.path(ctx) : c.path;
    const json = typeof c.json === 'function' ? (c.json as (ctx: Ctx) => unknown)(ctx) : c.json;
    const answer =
      c.raw && c.raw.body !== ''
        ? await call(server.app, c.method, path, {
            token,
            body: c.raw.body as BodyInit,
            headers: { 'content-type': c.raw.type ?? 'application/json' },
          })
        : c.raw
          ? await call(server.app, c.method, path, {
              token,
              headers: c.method === 'GET' ? {} : { 'content-type': 'application/json' },
            })
          : c.form
            ? await call(server.app, c.method, path, { token, body: c.form(ctx) })
            : await call(server.app, c.method, path, { token, json });
    expect(answer.status).toBe(c.status);
    expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(answer.body).toMatchObject({ status: c.status, title: expect.any(String), detail: expect.any(String) });
    if (c.field) expect(answer.body.errors?.map((e: any) => e.field)).toContain(c.field);
    if (c.code) expect(answer.body.code).toBe(c.code);
    const usersAfter = await server.db.kysely
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(usersAfter.n)).toBe(Number(usersBefore.n));
  });

  it('refuses expired tokens', async () => {
    const account = await registerAndLogin(server.url, 'expiring');
    expect((await call(server.url, 'GET', '/api/tasks', { token: account.token })).status).toBe(200);
    await server.db.kysely
      .updateTable('sessions')
      .set({ expires_at: Date.now() - 1 })
      .where('user_id', '=', Number(account.id))
      .execute();
    const answer = await call(server.url, 'GET', '/api/tasks', { token: account.token });
    expect(answer.status).toBe(401);
    expect(answer.body.code).toBe('invalid_token');
  });

  it('a failed photo update leaves the stored photo as it was', async () => {
    const account = await registerAndLogin(server.url, 'keeps');
    const set = await call(server.url, 'PUT', '/api/users/update', {
      json: { email: account.email, password: account.password, photo: dataUrl('image/webp', IMAGES.webp) },
    });
    expect(set.status).toBe(200);
    const wrongPassword = await call(server.url, 'PUT', '/api/users/update', {
      json: { email: account.email, password: 'wrong guess here', photo: dataUrl('image/gif', IMAGES.gif) },
    });
    expect(wrongPassword.status).toBe(401);
    const image = await call(server.url, 'GET', `/api/users/getimage?email=${encodeURIComponent(account.email)}`, {
      token: account.token,
    });
    expect(image.headers.get('content-type')).toBe('image/webp');
    expect(image.bytes.equals(IMAGES.webp)).toBe(true);
  });

  it('accepts GET and DELETE parameters in a JSON body too', async () => {
    const account = await registerAndLogin(server.url, 'bodyparams');
    // fetch refuses GET bodies, so speak raw HTTP for that one.
    const { request } = await import('node:http');
    const body = JSON.stringify({ id: account.id });
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${server.url}/api/users/find`,
        {
          method: 'GET',
          headers: {
            authorization: `Bearer ${account.token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(status).toBe(200);
    const task = await call(server.url, 'POST', '/api/tasks/create', {
      token: account.token,
      json: { title: 'by body' },
    });
    expect(
      (await call(server.url, 'DELETE', '/api/tasks/delete', { token: account.token, json: { id: task.body.task.id } }))
        .status,
    ).toBe(204);
  });
});
