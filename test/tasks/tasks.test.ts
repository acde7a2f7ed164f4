// Tasks as their users expect them (docs/tasks.md): the owner forms, listing with pages and a done
// filter, reading and changing one task, and admins acting for others.
import { beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import {
  type Account,
  ADMIN,
  ADMIN_ENV,
  call,
  login,
  openTasksServer,
  registerAndLogin,
  type TestServer,
} from '../users/helpers.js';

describe.each(databaseKinds)('tasks on %s', (kind) => {
  let server: TestServer;
  let me: Account;
  let adminToken: string;
  openTasksServer(kind, 'tasker', (opened) => ({ server, me } = opened), ADMIN_ENV);
  beforeAll(async () => {
    adminToken = (await login(server.url, ADMIN.email, ADMIN.password)).token;
  });

  const create = (json: unknown, token = me.token) => call(server.url, 'POST', '/api/tasks/create', { token, json });

  it('accepts the owner as a JSON string, a plain id, or not at all', async () => {
    const forms = [
      JSON.stringify({ id: me.id, email: me.email }),
      JSON.stringify(me.id),
      JSON.stringify(Number(me.id)),
      me.id,
      Number(me.id),
      undefined,
    ];
    for (const user of forms) {
      const answer = await create({
        title: `owner as ${typeof user} ${user}`,
        description: 'x',
        ...(user === undefined ? {} : { user }),
      });
      expect(answer.status, String(user)).toBe(201);
      expect(answer.body.task.user).toBe(me.id);
    }
  });

  it('lists newest first, with pages and a done filter', async () => {
    const fresh = await registerAndLogin(server.url, 'lister');
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) ids.push((await create({ title: `task ${i}` }, fresh.token)).body.task.id);
    await call(server.url, 'PATCH', `/api/tasks/${ids[1]}`, { token: fresh.token, json: { done: true } });

    const page1 = await call(server.url, 'GET', '/api/tasks?limit=2', { token: fresh.token });
    expect(page1.body).toMatchObject({ page: 1, limit: 2, totalPages: 3, totalResults: 5 });
    expect(page1.body.results.map((t: any) => t.title)).toEqual(['task 5', 'task 4']);
    const page3 = await call(server.url, 'GET', '/api/tasks?limit=2&page=3', { token: fresh.token });
    expect(page3.body.results.map((t: any) => t.title)).toEqual(['task 1']);

    const done = await call(server.url, 'GET', '/api/tasks?done=true', { token: fresh.token });
    expect(done.body.results.map((t: any) => t.id)).toEqual([ids[1]]);
    const open = await call(server.url, 'GET', '/api/tasks?done=false', { token: fresh.token });
    expect(open.body.totalResults).toBe(4);
  });

  it('reads and changes one task', async () => {
    const created = (await create({ title: 'draft', description: 'first words' })).body.task;
    const changed = await call(server.url, 'PATCH', `/api/tasks/${created.id}`, {
      token: me.token,
      json: { title: '  final  ', done: true },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.task).toMatchObject({ id: created.id, title: 'final', description: 'first words', done: true });
    expect(Date.parse(changed.body.task.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    const read = await call(server.url, 'GET', `/api/tasks/${created.id}`, { token: me.token });
    expect(read.body.task).toEqual(changed.body.task);
  });

  it('lets an admin create, list and delete tasks of another user', async () => {
    const made = await create({ title: 'from the admin', user: JSON.stringify({ id: me.id }) }, adminToken);
    expect(made.status).toBe(201);
    expect(made.body.task.user).toBe(me.id);
    const theirs = await call(server.url, 'GET', `/api/tasks?user=${me.id}&limit=100`, { token: adminToken });
    expect(theirs.body.results.map((t: any) => t.id)).toContain(made.body.task.id);
    const own = await call(server.url, 'GET', '/api/tasks', { token: adminToken });
    expect(own.body.totalResults).toBe(0);
    expect(
      (await call(server.url, 'DELETE', '/api/tasks/delete', { token: adminToken, json: { id: made.body.task.id } }))
        .status,
    ).toBe(204);
    expect((await call(server.url, 'GET', `/api/tasks/${made.body.task.id}`, { token: me.token })).status).toBe(404);
  });

  it('keeps text as given: no HTML interpretation, unicode intact', async () => {
    const title = '<img src=x onerror=alert(1)> ✓ Überprüfung 日本';
    const made = await create({ title, description: "'; drop table tasks; --" });
    expect(made.body.task.title).toBe(title);
    const read = await call(server.url, 'GET', `/api/tasks/${made.body.task.id}`, { token: me.token });
    expect(read.body.task.description).toBe("'; drop table tasks; --");
    expect(read.headers.get('content-type')).toMatch(/^application\/json/);
  });
});
