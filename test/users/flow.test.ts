// The whole life of an account, as a client would live it, on both databases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import type { TestServer } from '../support/server.js';
import { call, IMAGES, login, newPerson, resetCodeFor, startTasksServer } from './helpers.js';

describe.each(databaseKinds)('account life cycle on %s', (kind) => {
  let server: TestServer;
  let base: string;
  beforeAll(async () => {
    server = await startTasksServer(kind);
    base = server.url;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('register → login → find → photo → getimage → tasks → reset → old token refused → delete', async () => {
    const person = newPerson('life');

    const registered = await call(base, 'POST', '/api/users/register', {
      json: { ...person, email: person.email.toUpperCase() },
    });
    expect(registered.status).toBe(201);
    expect(registered.headers.get('content-type')).toMatch(/^application\/json/);
    const user = registered.body.user;
    expect(user).toMatchObject({
      first_name: 'Ada',
      last_name: 'Lovelace',
      username: person.username,
      role: 'user',
      photo: null,
    });
    expect(typeof user.id).toBe('string');
    expect(JSON.stringify(registered.body)).not.toMatch(/password|hash|scrypt/i);

    // Email is case-insensitive: the lower-case form logs in.
    const loggedIn = await call(base, 'POST', '/api/users/login', {
      json: { email: person.email, password: person.password },
    });
    expect(loggedIn.status).toBe(200);
    expect(loggedIn.body).toMatchObject({ token_type: 'Bearer', user: { id: user.id } });
    expect(loggedIn.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(loggedIn.body.expires_at)).toBeGreaterThan(Date.now() + 3600_000);
    const token = loggedIn.body.token;

    const found = await call(base, 'GET', `/api/users/find?id=${user.id}`, { token });
    expect(found.status).toBe(200);
    expect(found.body.user).toEqual(user);

    const form = new FormData();
    form.append('email', person.email);
    form.append('password', person.password);
    form.append('photo', new Blob([IMAGES.png], { type: 'image/png' }), 'me.png');
    const updated = await call(base, 'PUT', '/api/users/update', { body: form });
    expect(updated.status).toBe(200);
    expect(updated.body.user.photo).toBe(`/api/users/getimage?email=${encodeURIComponent(user.email)}`);

    const image = await call(base, 'GET', `/api/users/getimage?email=${encodeURIComponent(person.email)}`, { token });
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(image.headers.get('x-content-type-options')).toBe('nosniff');
    expect(image.bytes.equals(IMAGES.png)).toBe(true);

    const created = await call(base, 'POST', '/api/tasks/create', {
      token,
      json: { title: 'Write the report', description: 'by Friday', user: JSON.stringify(user) },
    });
    expect(created.status).toBe(201);
    expect(created.body.task).toMatchObject({
      title: 'Write the report',
      description: 'by Friday',
      done: false,
      user: user.id,
    });
    const second = await call(base, 'POST', '/api/tasks/create', {
      token,
      json: { title: 'Second', description: '', user: user.id },
    });
    expect(second.status).toBe(201);

    const listed = await call(base, 'GET', '/api/tasks', { token });
    expect(listed.status).toBe(200);
    expect(listed.body.totalResults).toBe(2);
    expect(listed.body.results.map((t: any) => t.title)).toEqual(['Second', 'Write the report']);

    const deleted = await call(base, 'DELETE', `/api/tasks/delete?id=${created.body.task.id}`, { token });
    expect(deleted.status).toBe(204);
    expect((await call(base, 'GET', '/api/tasks', { token })).body.totalResults).toBe(1);

    // Reset: ask, read the code from the outbox, set a new password.
    const asked = await call(base, 'POST', '/api/users/forgotpassword/request', { json: { email: person.email } });
    expect(asked.status).toBe(202);
    const code = await resetCodeFor(server, user.email);
    const newPassword = 'a brand new passphrase 42';
    const reset = await call(base, 'PUT', '/api/users/forgotpassword', {
      json: { email: person.email, password: newPassword, token: code },
    });
    expect(reset.status).toBe(204);
    // The code works once; the old token and the old password are dead.
    const again = await call(base, 'PUT', '/api/users/forgotpassword', {
      json: { email: person.email, password: 'yet another passphrase 43', token: code },
    });
    expect(again.status).toBe(400);
    expect(again.body.code).toBe('invalid_reset_token');
    const oldToken = await call(base, 'GET', `/api/users/find?id=${user.id}`, { token });
    expect(oldToken.status).toBe(401);
    expect(oldToken.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(
      (await call(base, 'POST', '/api/users/login', { json: { email: person.email, password: person.password } }))
        .status,
    ).toBe(401);
    const fresh = await call(base, 'POST', '/api/users/login', {
      json: { email: person.email, password: newPassword },
    });
    expect(fresh.status).toBe(200);
    const freshToken = fresh.body.token;

    const gone = await call(base, 'DELETE', '/api/users/delete', { token: freshToken, json: { id: user.id } });
    expect(gone.status).toBe(204);
    expect((await call(base, 'GET', '/api/tasks', { token: freshToken })).status).toBe(401);
    expect(
      (await call(base, 'POST', '/api/users/login', { json: { email: person.email, password: newPassword } })).status,
    ).toBe(401);
    // Nothing of the user is left behind.
    for (const table of ['tasks', 'user_photos', 'sessions', 'password_resets', 'api_keys', 'mail_outbox'] as const) {
      const rows = await server.db.kysely
        .selectFrom(table)
        .selectAll()
        .where('user_id', '=', Number(user.id))
        .execute();
      expect(rows, table).toEqual([]);
    }
  });

  it('changes a password with the current one and keeps only the calling session', async () => {
    const person = newPerson('change');
    await call(base, 'POST', '/api/users/register', { json: person });
    const first = (await login(base, person.email, person.password)).token;
    const second = (await login(base, person.email, person.password)).token;
    const wrong = await call(base, 'PUT', '/api/users/forgotpassword', {
      token: first,
      json: { email: person.email, password: 'new secret words 1', current_password: 'not it at all' },
    });
    expect(wrong.status).toBe(401);
    const changed = await call(base, 'PUT', '/api/users/forgotpassword', {
      token: first,
      json: { email: person.email, password: 'new secret words 1', current_password: person.password },
    });
    expect(changed.status).toBe(204);
    expect((await call(base, 'GET', '/api/tasks', { token: first })).status).toBe(200);
    expect((await call(base, 'GET', '/api/tasks', { token: second })).status).toBe(401);
    // Without a bearer token, current_password is no proof.
    const anonymous = await call(base, 'PUT', '/api/users/forgotpassword', {
      json: { email: person.email, password: 'new secret words 2', current_password: 'new secret words 1' },
    });
    expect(anonymous.status).toBe(401);
  });

  it('logs out: the token stops working', async () => {
    const person = newPerson('logout');
    await call(base, 'POST', '/api/users/register', { json: person });
    const token = (await login(base, person.email, person.password)).token;
    expect((await call(base, 'POST', '/api/users/logout', { token })).status).toBe(204);
    expect((await call(base, 'GET', '/api/tasks', { token })).status).toBe(401);
  });

  it('expires reset codes and refuses one for another account', async () => {
    const victim = newPerson('victim');
    const attacker = newPerson('attacker');
    for (const person of [victim, attacker]) await call(base, 'POST', '/api/users/register', { json: person });
    await call(base, 'POST', '/api/users/forgotpassword/request', { json: { email: attacker.email } });
    const code = await resetCodeFor(server, attacker.email);
    const crossed = await call(base, 'PUT', '/api/users/forgotpassword', {
      json: { email: victim.email, password: 'taken over account 1', token: code },
    });
    expect(crossed.status).toBe(400);
    // The failed attempt consumed the code: a code is single-use whatever happens.
    await call(base, 'POST', '/api/users/forgotpassword/request', { json: { email: attacker.email } });
    const next = await resetCodeFor(server, attacker.email, code);
    expect(next).not.toBe(code);
    await server.db.kysely
      .updateTable('password_resets')
      .set({ expires_at: Date.now() - 1 })
      .execute();
    const expired = await call(base, 'PUT', '/api/users/forgotpassword', {
      json: { email: attacker.email, password: 'my new passphrase 9', token: next },
    });
    expect(expired.status).toBe(400);
    expect(
      (await call(base, 'POST', '/api/users/login', { json: { email: attacker.email, password: attacker.password } }))
        .status,
    ).toBe(200);
  });
});
