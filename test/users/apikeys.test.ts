// OneSky-style key pairs for the quotation API, and the Identity contract other services rely on.
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createIdentity } from '../../src/users/identity.js';
import { databaseKinds, postgresAvailable } from '../support/databases.js';
import { startTestServer } from '../support/server.js';
import { type Account, call, openTasksServer, registerAndLogin, TEST_ENV, type TestServer } from './helpers.js';

describe.each(databaseKinds)('API keys and identity on %s', (kind) => {
  let server: TestServer;
  let me: Account;
  openTasksServer(kind, 'keys', (opened) => ({ server, me } = opened));

  it('creates a pair whose secret is shown once, stored encrypted, and recovered by Identity', async () => {
    const created = await call(server.url, 'POST', '/api/users/apikeys', {
      token: me.token,
      json: { name: 'translations' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'translations',
      api_key: expect.stringMatching(/^[0-9a-f]{32}$/),
      api_secret: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const { api_key, api_secret } = created.body;

    const listed = await call(server.url, 'GET', '/api/users/apikeys', { token: me.token });
    expect(listed.body.results).toEqual([{ api_key, name: 'translations', created_at: created.body.created_at }]);
    expect(JSON.stringify(listed.body)).not.toContain(api_secret);

    const row = await server.db.kysely
      .selectFrom('api_keys')
      .selectAll()
      .where('api_key', '=', api_key)
      .executeTakeFirstOrThrow();
    expect(Buffer.from(row.secret_encrypted).includes(Buffer.from(api_secret))).toBe(false);
    expect(Buffer.from(row.secret_encrypted).includes(Buffer.from(api_secret, 'hex'))).toBe(false);

    const identity = createIdentity(server.db, server.config);
    expect(await identity.fromApiKey(api_key)).toEqual({
      principal: { userId: me.id, role: 'user', email: me.email },
      secret: api_secret,
    });
    expect(await identity.fromApiKey('0'.repeat(32))).toBeNull();
    expect(await identity.fromApiKey('not a key')).toBeNull();
    expect(await identity.fromBearer(me.token)).toEqual({ userId: me.id, role: 'user', email: me.email });
    expect(await identity.fromBearer('x'.repeat(43))).toBeNull();

    expect(
      (await call(server.url, 'DELETE', '/api/users/apikeys', { token: me.token, json: { api_key } })).status,
    ).toBe(204);
    expect(await identity.fromApiKey(api_key)).toBeNull();
    expect(
      (await call(server.url, 'DELETE', `/api/users/apikeys?api_key=${api_key}`, { token: me.token })).status,
    ).toBe(404);
  });

  it('allows at most 10 pairs per user', async () => {
    const owner = await registerAndLogin(server.url, 'manykeys');
    const statuses = [];
    for (let i = 0; i < 11; i++) {
      statuses.push((await call(server.url, 'POST', '/api/users/apikeys', { token: owner.token })).status);
    }
    expect(statuses).toEqual([...Array(10).fill(201), 409]);
  });

  it('keeps the limit of 10 pairs when 30 requests for one user arrive at once', async () => {
    const owner = await registerAndLogin(server.url, 'racingkeys');
    const statuses = await Promise.all(
      Array.from(
        { length: 30 },
        async () => (await call(server.url, 'POST', '/api/users/apikeys', { token: owner.token })).status,
      ),
    );
    expect(statuses.filter((status) => status === 201)).toHaveLength(10);
    expect(statuses.filter((status) => status === 409)).toHaveLength(20);
    const listed = await call(server.url, 'GET', '/api/users/apikeys', { token: owner.token });
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body).match(/"api_key"/g)).toHaveLength(10);
  });

  it('deleting a user revokes their pairs', async () => {
    const owner = await registerAndLogin(server.url, 'leaving');
    const { api_key } = (await call(server.url, 'POST', '/api/users/apikeys', { token: owner.token })).body;
    const identity = createIdentity(server.db, server.config);
    expect(await identity.fromApiKey(api_key)).not.toBeNull();
    await call(server.url, 'DELETE', `/api/users/delete?id=${owner.id}`, { token: owner.token });
    expect(await identity.fromApiKey(api_key)).toBeNull();
  });
});

describe('the encryption key when QUARTET_SECRET_KEY is unset', () => {
  const env = { ...TEST_ENV, QUARTET_SECRET_KEY: '' };

  it('on SQLite: generated once beside the database (mode 600) and shared by later processes', async () => {
    const first = await startTestServer('sqlite', { env });
    try {
      const me = await registerAndLogin(first.url, 'filekey');
      const { api_key, api_secret } = (await call(first.url, 'POST', '/api/users/apikeys', { token: me.token })).body;
      const file = join(
        dirname(first.config.database.kind === 'sqlite' ? first.config.database.file : ''),
        'quartet-secret.key',
      );
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const second = await startTestServer('sqlite', { env, database: first.database });
      try {
        expect((await createIdentity(second.db, second.config).fromApiKey(api_key))?.secret).toBe(api_secret);
      } finally {
        await second.close({ keepDatabase: true });
      }
    } finally {
      await first.close();
    }
  });

  it.skipIf(!postgresAvailable)('on PostgreSQL: API keys are refused with 503 until it is set', async () => {
    const server = await startTestServer('postgres', { env });
    try {
      const me = await registerAndLogin(server.url, 'nokey');
      const answer = await call(server.url, 'POST', '/api/users/apikeys', { token: me.token });
      expect(answer.status).toBe(503);
      expect(answer.body.code).toBe('secret_key_missing');
    } finally {
      await server.close();
    }
  });
});
