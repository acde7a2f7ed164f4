// Every protected route × anonymous / owner / other user / admin. Each cell acts on a fresh
// owner (with a task, a photo and an API key), so destructive cells do not disturb others.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import {
  type Account,
  call,
  dataUrl,
  IMAGES,
  login,
  newPerson,
  type RequestOptions,
  registerAndLogin,
  startTasksServerWithAdmin,
  type TestServer,
} from './helpers.js';

type Who = 'anonymous' | 'owner' | 'other' | 'admin';
const WHO: Who[] = ['anonymous', 'owner', 'other', 'admin'];

interface Owner extends Account {
  taskId: string;
  apiKey: string;
}

interface Cell {
  /** The caller's account; anonymous has none. */
  caller?: Account;
  owner: Owner;
}

interface Row {
  route: string;
  /** Changes the owner or ends sessions: each cell needs a fresh owner and fresh logins. */
  destructive?: boolean;
  request(cell: Cell): [method: string, path: string, options?: RequestOptions];
  expect: Record<Who, number>;
}

const q = encodeURIComponent;

const ROWS: Row[] = [
  // Public routes: a bearer token changes nothing (registration never yields an admin).
  {
    route: 'POST /api/users/register',
    request: () => ['POST', '/api/users/register', { json: newPerson('matrix') }],
    expect: { anonymous: 201, owner: 201, other: 201, admin: 201 },
  },
  {
    route: 'POST /api/users/login',
    request: ({ owner }) => ['POST', '/api/users/login', { json: { email: owner.email, password: owner.password } }],
    expect: { anonymous: 200, owner: 200, other: 200, admin: 200 },
  },
  {
    route: 'POST /api/users/forgotpassword/request',
    request: ({ owner }) => ['POST', '/api/users/forgotpassword/request', { json: { email: owner.email } }],
    expect: { anonymous: 202, owner: 202, other: 202, admin: 202 },
  },
  {
    route: 'DELETE /api/users/delete',
    destructive: true,
    request: ({ owner }) => ['DELETE', `/api/users/delete?id=${owner.id}`],
    expect: { anonymous: 401, owner: 204, other: 403, admin: 204 },
  },
  {
    route: 'GET /api/users/all',
    request: () => ['GET', '/api/users/all'],
    expect: { anonymous: 401, owner: 403, other: 403, admin: 200 },
  },
  {
    route: 'GET /api/users/find',
    request: ({ owner }) => ['GET', `/api/users/find?id=${owner.id}`],
    expect: { anonymous: 401, owner: 200, other: 403, admin: 200 },
  },
  {
    route: 'GET /api/users/getimage',
    request: ({ owner }) => ['GET', `/api/users/getimage?email=${q(owner.email)}`],
    expect: { anonymous: 401, owner: 200, other: 200, admin: 200 },
  },
  {
    // The password is the proof: each caller sends the owner's email with their own password.
    route: 'PUT /api/users/update',
    request: ({ owner, caller }) => [
      'PUT',
      '/api/users/update',
      {
        json: {
          email: owner.email,
          password: caller?.password ?? 'no password known',
          photo: dataUrl('image/gif', IMAGES.gif),
        },
      },
    ],
    expect: { anonymous: 401, owner: 200, other: 401, admin: 401 },
  },
  {
    route: 'PUT /api/users/forgotpassword (current_password)',
    destructive: true,
    request: ({ owner, caller }) => [
      'PUT',
      '/api/users/forgotpassword',
      {
        json: {
          email: owner.email,
          password: 'replacement passphrase 7',
          current_password: caller?.password ?? owner.password,
        },
      },
    ],
    expect: { anonymous: 401, owner: 204, other: 403, admin: 403 },
  },
  {
    route: 'POST /api/users/logout',
    destructive: true,
    request: () => ['POST', '/api/users/logout'],
    expect: { anonymous: 401, owner: 204, other: 204, admin: 204 },
  },
  {
    route: 'POST /api/users/apikeys',
    request: () => ['POST', '/api/users/apikeys', { json: { name: 'ci' } }],
    expect: { anonymous: 401, owner: 201, other: 201, admin: 201 },
  },
  {
    route: 'GET /api/users/apikeys',
    request: () => ['GET', '/api/users/apikeys'],
    expect: { anonymous: 401, owner: 200, other: 200, admin: 200 },
  },
  {
    route: 'DELETE /api/users/apikeys',
    destructive: true,
    request: ({ owner }) => ['DELETE', `/api/users/apikeys?api_key=${owner.apiKey}`],
    expect: { anonymous: 401, owner: 204, other: 404, admin: 404 },
  },
  {
    route: 'POST /api/tasks/create',
    request: ({ owner }) => [
      'POST',
      '/api/tasks/create',
      { json: { title: 't', description: 'd', user: JSON.stringify(owner.id) } },
    ],
    expect: { anonymous: 401, owner: 201, other: 403, admin: 201 },
  },
  {
    route: 'GET /api/tasks',
    request: () => ['GET', '/api/tasks'],
    expect: { anonymous: 401, owner: 200, other: 200, admin: 200 },
  },
  {
    route: 'GET /api/tasks?user=',
    request: ({ owner }) => ['GET', `/api/tasks?user=${owner.id}`],
    expect: { anonymous: 401, owner: 200, other: 403, admin: 200 },
  },
  {
    route: 'GET /api/tasks/:id',
    request: ({ owner }) => ['GET', `/api/tasks/${owner.taskId}`],
    expect: { anonymous: 401, owner: 200, other: 404, admin: 200 },
  },
  {
    route: 'PATCH /api/tasks/:id',
    request: ({ owner }) => ['PATCH', `/api/tasks/${owner.taskId}`, { json: { done: true } }],
    expect: { anonymous: 401, owner: 200, other: 404, admin: 200 },
  },
  {
    route: 'DELETE /api/tasks/delete',
    destructive: true,
    request: ({ owner }) => ['DELETE', `/api/tasks/delete?id=${owner.taskId}`],
    expect: { anonymous: 401, owner: 204, other: 404, admin: 204 },
  },
];

describe.each(databaseKinds)('authorization matrix on %s', (kind) => {
  let server: TestServer;
  let admin: Account;
  let other: Account;

  async function freshOwner(): Promise<Owner> {
    const account = await registerAndLogin(server.url, 'owner');
    const task = await call(server.url, 'POST', '/api/tasks/create', {
      token: account.token,
      json: { title: 'mine', description: '' },
    });
    const photo = await call(server.url, 'PUT', '/api/users/update', {
      json: { email: account.email, password: account.password, photo: dataUrl('image/png', IMAGES.png) },
    });
    const key = await call(server.url, 'POST', '/api/users/apikeys', { token: account.token });
    expect([task.status, photo.status, key.status]).toEqual([201, 200, 201]);
    return { ...account, taskId: task.body.task.id, apiKey: key.body.api_key };
  }

  beforeAll(async () => {
    ({ server, admin } = await startTasksServerWithAdmin(kind));
    other = await registerAndLogin(server.url, 'other');
  });
  afterAll(async () => {
    await server?.close();
  });

  it.each(ROWS)('$route', async (row) => {
    const seen: Record<string, number> = {};
    const shared = row.destructive ? undefined : await freshOwner();
    for (const who of WHO) {
      const owner = shared ?? (await freshOwner());
      // Destructive cells log in anew: logout and password changes end sessions.
      const relogin = async (account: Account) =>
        row.destructive ? { ...account, ...(await login(server.url, account.email, account.password)) } : account;
      const caller =
        who === 'owner'
          ? owner
          : who === 'other'
            ? await relogin(other)
            : who === 'admin'
              ? await relogin(admin)
              : undefined;
      const [method, path, options = {}] = row.request({ owner, caller });
      // A status and a body shape per cell: injected, no socket needed.
      const answer = await call(server.app, method, path, { ...options, token: caller?.token });
      seen[who] = answer.status;
      if (row.route === 'POST /api/users/register') expect(answer.body.user.role).toBe('user');
      if (answer.status >= 400) {
        expect(answer.headers.get('content-type'), `${row.route} as ${who}`).toMatch(/^application\/problem\+json/);
        expect(answer.body.status).toBe(answer.status);
      }
      if (answer.status === 401) expect(answer.headers.get('www-authenticate') ?? answer.body.code).toBeTruthy();
    }
    expect(seen).toEqual(row.expect);
  });

  it('an admin deleting a user removes their data and ends their sessions', async () => {
    const owner = await freshOwner();
    expect(
      (await call(server.url, 'DELETE', '/api/users/delete', { token: admin.token, json: { id: Number(owner.id) } }))
        .status,
    ).toBe(204);
    expect((await call(server.url, 'GET', '/api/tasks', { token: owner.token })).status).toBe(401);
    expect((await call(server.url, 'GET', `/api/users/find?id=${owner.id}`, { token: admin.token })).status).toBe(404);
    expect(
      (await call(server.url, 'GET', `/api/users/getimage?email=${q(owner.email)}`, { token: admin.token })).status,
    ).toBe(404);
    expect((await call(server.url, 'DELETE', `/api/users/delete?id=${owner.id}`, { token: admin.token })).status).toBe(
      404,
    );
  });

  it('an admin pages through every user, without secrets', async () => {
    const first = await call(server.url, 'GET', '/api/users/all?limit=7', { token: admin.token });
    expect(first.status).toBe(200);
    const { totalResults, totalPages } = first.body;
    expect(totalPages).toBe(Math.ceil(totalResults / 7));
    const ids: string[] = [];
    for (let page = 1; page <= totalPages; page++) {
      const answer = await call(server.url, 'GET', `/api/users/all?limit=7&page=${page}`, { token: admin.token });
      ids.push(...answer.body.results.map((u: any) => u.id));
      expect(JSON.stringify(answer.body)).not.toMatch(/password|scrypt|token/i);
    }
    expect(new Set(ids).size).toBe(totalResults);
    expect(ids.length).toBe(totalResults);
  });

  it('self-registration never makes an admin, even when asked', async () => {
    const attempt = await call(server.url, 'POST', '/api/users/register', {
      json: {
        first_name: 'M',
        last_name: 'A',
        email: 'mallory@example.test',
        username: 'mallory',
        password: 'promote me please 1',
        role: 'admin',
      },
    });
    expect(attempt.status).toBe(400);
    expect(attempt.body.errors).toContainEqual(expect.objectContaining({ field: 'role', type: 'extra_forbidden' }));
  });
});
