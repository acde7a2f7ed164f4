// Account details that need more than one process or a restart: hash upgrades, the bootstrap
// admin, and single-use reset codes under concurrent use.
import { describe, expect, it } from 'vitest';
import { databaseKinds, type DatabaseKind } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { UsersStore } from '../../src/users/store.js';
import { call, login, newPerson, registerAndLogin, resetCodeFor, startTasksServer, TEST_ENV } from './helpers.js';

/** A newly registered person of the users and tasks API. */
async function register(base: string, prefix: string) {
  const person = newPerson(prefix);
  await call(base, 'POST', '/api/users/register', { json: person });
  return person;
}

/** Runs `test` against a fresh server, then closes it and drops its database. */
async function withServer(kind: DatabaseKind, test: (server: TestServer) => Promise<void>): Promise<void> {
  const server = await startTasksServer(kind);
  try {
    await test(server);
  } finally {
    await server.close();
  }
}

describe.each(databaseKinds)('accounts on %s', (kind) => {
  it('upgrades a hash to a higher configured cost at the next login', async () => {
    const first = await startTestServer(kind, { env: TEST_ENV });
    try {
      const person = await register(first.url, 'rehash');
      const stored = async () =>
        (
          await first.db.kysely
            .selectFrom('users')
            .select('password_hash')
            .where('username', '=', person.username)
            .executeTakeFirstOrThrow()
        ).password_hash;
      expect(await stored()).toMatch(/^scrypt\$1024\$8\$1\$/);
      const stronger = await startTestServer(kind, {
        env: { ...TEST_ENV, USERS_SCRYPT_N: '4096' },
        database: first.database,
      });
      try {
        await login(stronger.url, person.email, person.password);
      } finally {
        await stronger.close({ keepDatabase: true });
      }
      expect(await stored()).toMatch(/^scrypt\$4096\$8\$1\$/);
      await login(first.url, person.email, person.password);
    } finally {
      await first.close();
    }
  });

  it('creates the bootstrap admin once, and never promotes an existing account', () =>
    withServer(kind, async (server) => {
      const person = await register(server.url, 'squatter');
      const env = {
        ...TEST_ENV,
        USERS_ADMIN_EMAIL: person.email,
        USERS_ADMIN_PASSWORD: 'operator passphrase 2',
        USERS_ADMIN_USERNAME: 'root2',
      };
      const restarted = await startTestServer(kind, { env, database: server.database });
      try {
        const { token } = await login(restarted.url, person.email, person.password);
        expect((await call(restarted.url, 'GET', '/api/users/all', { token })).status).toBe(403);
      } finally {
        await restarted.close({ keepDatabase: true });
      }
      const fresh = { ...env, USERS_ADMIN_EMAIL: 'boss@example.test' };
      // Two processes starting together create one admin between them. (On SQLite they start
      // one after the other: simultaneous migrations there can fail with "database is locked".)
      const start = () => startTestServer(kind, { env: fresh, database: server.database });
      const [a, b] = kind === 'postgres' ? await Promise.all([start(), start()]) : [await start(), await start()];
      try {
        const { token } = await login(a.url, 'boss@example.test', 'operator passphrase 2');
        const all = await call(b.url, 'GET', '/api/users/all', { token });
        expect(all.status).toBe(200);
        expect(all.body.results.filter((u: any) => u.role === 'admin')).toHaveLength(1);
      } finally {
        await Promise.all([a.close({ keepDatabase: true }), b.close({ keepDatabase: true })]);
      }
    }));

  it('a reset code used by many requests at once works exactly once', () =>
    withServer(kind, async (server) => {
      const person = await register(server.url, 'race');
      await call(server.url, 'POST', '/api/users/forgotpassword/request', { json: { email: person.email } });
      const code = await resetCodeFor(server, person.email);
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          call(server.url, 'PUT', '/api/users/forgotpassword', {
            json: { email: person.email, password: `racing passphrase ${i}`, token: code },
          }),
        ),
      );
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([204, 400, 400, 400, 400, 400, 400, 400]);
      const winner = answers.findIndex((a) => a.status === 204);
      await login(server.url, person.email, `racing passphrase ${winner}`);
    }));

  it('prunes expired sessions and reset codes but keeps live ones', () =>
    withServer(kind, async (server) => {
      const stale = await registerAndLogin(server.url, 'stale');
      const live = await registerAndLogin(server.url, 'live');
      await server.db.kysely
        .updateTable('sessions')
        .set({ expires_at: Date.now() - 1 })
        .where('user_id', '=', Number(stale.id))
        .execute();
      await new UsersStore(server.db).pruneExpired(7 * 24 * 3600_000);
      const left = await server.db.kysely.selectFrom('sessions').select('user_id').execute();
      expect(left.map((row) => String(row.user_id))).toEqual([live.id]);
      expect((await call(server.url, 'GET', '/api/tasks', { token: live.token })).status).toBe(200);
    }));
});
