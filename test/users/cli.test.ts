// The operator's CLI: admins exist only through it (or the bootstrap variables), and the
// reset-mail outbox is read with it when no SMTP server is configured.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { QUARTET_COMMAND } from '../support/process.js';
import { startTestServer } from '../support/server.js';
import { call, login, resetCodeFor, TEST_ENV } from './helpers.js';

const run = promisify(execFile);

function quartet(database: TestDatabase, args: string[], input?: string) {
  const child = run(process.execPath, [...QUARTET_COMMAND, ...args], {
    env: { ...process.env, ...TEST_ENV, DATABASE_URL: database.url, LOG_LEVEL: 'silent' },
  });
  if (input !== undefined) child.child.stdin!.end(input);
  return child.then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error) => ({ code: error.code as number, stdout: `${error.stdout}${error.stderr}` }),
  );
}

describe('quartet users', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('creates an admin who can then list every user over HTTP', async () => {
    const created = await quartet(
      database,
      ['users', 'create', '--admin', '--email', 'ops@example.test', '--username', 'ops', '--password-stdin'],
      'operator passphrase 1\n',
    );
    expect(created).toMatchObject({ code: 0 });
    expect(created.stdout).toMatch(/created admin ops@example\.test/);
    const weak = await quartet(
      database,
      ['users', 'create', '--email', 'weak@example.test', '--username', 'weak', '--password-stdin'],
      'password\n',
    );
    expect(weak.code).toBe(1);
    expect(weak.stdout).toMatch(/too common/);

    const server = await startTestServer('sqlite', { env: TEST_ENV, database });
    try {
      const { token } = await login(server.url, 'ops@example.test', 'operator passphrase 1');
      const all = await call(server.url, 'GET', '/api/users/all', { token });
      expect(all.status).toBe(200);
      expect(all.body.results).toEqual([expect.objectContaining({ email: 'ops@example.test', role: 'admin' })]);
      await call(server.url, 'POST', '/api/users/forgotpassword/request', { json: { email: 'ops@example.test' } });
      await resetCodeFor(server, 'ops@example.test');
    } finally {
      await server.close({ keepDatabase: true });
    }
    const listed = await quartet(database, ['users', 'list']);
    expect(listed.stdout).toMatch(/^1\tadmin\tops@example\.test\tops\t/m);
    const outbox = await quartet(database, ['users', 'outbox']);
    expect(outbox.stdout).toMatch(/to ops@example\.test/);
    expect(outbox.stdout).toMatch(/Reset code: [A-Za-z0-9_-]{43}/);
  }, 120_000); // four CLI processes, each starting tsx: slow on a busy machine

  it('explains its usage', async () => {
    const answer = await quartet(database, ['users', 'frobnicate']);
    expect(answer.code).toBe(2);
    expect(answer.stdout).toMatch(/quartet users create/);
  }, 60_000);
});
