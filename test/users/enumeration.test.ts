// No account enumeration (same answers, similar time) and brute-force limits that hold across
// processes sharing one database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openForSuite } from '../support/lifecycle.js';
import { databaseKinds } from '../support/databases.js';
import { startTestServer } from '../support/server.js';
import {
  type Account,
  call,
  newPerson,
  registerAndLogin,
  startTasksServer,
  TEST_ENV,
  type TestServer,
} from './helpers.js';

/** The parts of an answer a client sees, minus what differs per request. */
function shape(answer: { status: number; body: any }) {
  return { status: answer.status, body: answer.body };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

describe.each(databaseKinds)('no enumeration on %s', (kind) => {
  let server: TestServer;
  let alice: Account;
  let bob: Account;
  // A realistic hash cost here, so that timing differences would show.
  beforeAll(async () => {
    server = await startTasksServer(kind, { USERS_SCRYPT_N: '16384' });
    alice = await registerAndLogin(server.url, 'alice');
    bob = await registerAndLogin(server.url, 'bob');
  });
  afterAll(async () => {
    await server?.close();
  });

  it('login: unknown email and wrong password give the same answer in similar time', async () => {
    const unknown = { email: 'nobody-here@example.test', password: 'some password 1' };
    const wrong = { email: alice.email, password: 'some password 1' };
    const a = await call(server.url, 'POST', '/api/users/login', { json: unknown });
    const b = await call(server.url, 'POST', '/api/users/login', { json: wrong });
    expect(shape(a)).toEqual(shape(b));
    expect(a.status).toBe(401);
    const times: Record<'unknown' | 'wrong', number[]> = { unknown: [], wrong: [] };
    for (let i = 0; i < 8; i++) {
      for (const [name, json] of [
        ['unknown', unknown],
        ['wrong', wrong],
      ] as const) {
        const started = performance.now();
        await call(server.url, 'POST', '/api/users/login', { json });
        times[name].push(performance.now() - started);
      }
    }
    const [u, w] = [median(times.unknown), median(times.wrong)];
    // Both pay for one scrypt at the same cost; allow for noise on a busy 2-core machine.
    expect(Math.abs(u - w)).toBeLessThan(Math.max(u, w) * 0.5 + 5);
  });

  it('registration: a taken email or username answers alike, without saying which', async () => {
    const takenEmail = await call(server.url, 'POST', '/api/users/register', {
      json: { ...newPerson('x'), email: alice.email.toUpperCase() },
    });
    const takenName = await call(server.url, 'POST', '/api/users/register', {
      json: { ...newPerson('y'), username: 'ALICE' + alice.email.slice(5, alice.email.indexOf('@')) },
    });
    expect(takenEmail.status).toBe(409);
    expect(shape(takenEmail)).toEqual(shape(takenName));
  });

  it('reset request: 202 with the same body whether the email exists or not', async () => {
    const known = await call(server.url, 'POST', '/api/users/forgotpassword/request', { json: { email: alice.email } });
    const unknown = await call(server.url, 'POST', '/api/users/forgotpassword/request', {
      json: { email: 'ghost@example.test' },
    });
    expect(known.status).toBe(202);
    expect(shape(known)).toEqual(shape(unknown));
  });

  it('reset with a wrong code: same answer for known and unknown emails', async () => {
    const json = (email: string) => ({ email, password: 'fresh passphrase 12', token: 'B'.repeat(43) });
    const known = await call(server.url, 'PUT', '/api/users/forgotpassword', { json: json(alice.email) });
    const unknown = await call(server.url, 'PUT', '/api/users/forgotpassword', { json: json('ghost@example.test') });
    expect(known.status).toBe(400);
    expect(shape(known)).toEqual(shape(unknown));
  });

  it("other users' ids: the same answer whether they exist or not", async () => {
    const existing = await call(server.url, 'GET', `/api/users/find?id=${bob.id}`, { token: alice.token });
    const missing = await call(server.url, 'GET', '/api/users/find?id=987654', { token: alice.token });
    expect(existing.status).toBe(403);
    expect(shape(existing)).toEqual(shape(missing));
    const task = await call(server.url, 'POST', '/api/tasks/create', { token: bob.token, json: { title: "bob's" } });
    const theirs = await call(server.url, 'GET', `/api/tasks/${task.body.task.id}`, { token: alice.token });
    const none = await call(server.url, 'GET', '/api/tasks/987654', { token: alice.token });
    expect(theirs.status).toBe(404);
    expect(shape(theirs)).toEqual(shape(none));
  });
});

describe.each(databaseKinds)('brute-force limits on %s', (kind) => {
  let server: TestServer;
  const limits = { USERS_LOGIN_ACCOUNT_LIMIT: '3', USERS_LOGIN_ADDRESS_LIMIT: '12', USERS_RESET_MAIL_LIMIT: '2' };
  openForSuite(
    () => startTestServer(kind, { env: { ...TEST_ENV, ...limits } }),
    (opened) => (server = opened),
  );

  it('locks an account after too many attempts, known or unknown, across two processes', async () => {
    // A second process on the same database: the limit is shared, not per process.
    const second = await startTestServer(kind, { env: { ...TEST_ENV, ...limits }, database: server.database });
    try {
      const victim = await registerAndLogin(server.url, 'victim');
      const bases = [server.url, second.url, server.url];
      for (const base of bases) {
        expect(
          (
            await call(base, 'POST', '/api/users/login', {
              json: { email: victim.email, password: 'guess number one' },
            })
          ).status,
        ).toBe(401);
      }
      // The limit is reached: even the right password waits, on either process.
      for (const base of [second.url, server.url]) {
        const locked = await call(base, 'POST', '/api/users/login', {
          json: { email: victim.email, password: victim.password },
        });
        expect(locked.status).toBe(429);
        expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(locked.body.code).toBe('rate_limited');
      }
      // The photo route checks the same password, so it shares the same limit.
      const viaUpdate = await call(second.url, 'PUT', '/api/users/update', {
        json: { email: victim.email, password: victim.password, photo: null },
      });
      expect(viaUpdate.status).toBe(429);
      // An unknown email is limited the same way: the limit reveals nothing.
      const ghost = { email: 'ghost-account@example.test', password: 'guess number one' };
      const ghostStatuses = [];
      for (let i = 0; i < 4; i++) {
        ghostStatuses.push((await call(server.url, 'POST', '/api/users/login', { json: ghost })).status);
      }
      expect(ghostStatuses).toEqual([401, 401, 401, 429]);
    } finally {
      await second.close({ keepDatabase: true });
    }
  });

  it('limits attempts per client address across accounts', async () => {
    const own = await startTestServer(kind, { env: { ...TEST_ENV, USERS_LOGIN_ADDRESS_LIMIT: '4' } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const answer = await call(own.url, 'POST', '/api/users/login', {
          json: { email: `spray${i}@example.test`, password: 'Winter2024!' },
        });
        statuses.push(answer.status);
      }
      expect(statuses).toEqual([401, 401, 401, 401, 429, 429]);
    } finally {
      await own.close();
    }
  });

  it('sends at most USERS_RESET_MAIL_LIMIT reset mails an hour, silently', async () => {
    const person = newPerson('mailbomb');
    await call(server.url, 'POST', '/api/users/register', { json: person });
    for (let i = 0; i < 4; i++) {
      expect(
        (await call(server.url, 'POST', '/api/users/forgotpassword/request', { json: { email: person.email } })).status,
      ).toBe(202);
    }
    // The mails are written after the answers: wait for two, then make sure no third follows.
    const count = async () =>
      (await server.db.kysely.selectFrom('mail_outbox').select('id').where('recipient', '=', person.email).execute())
        .length;
    for (let i = 0; i < 250 && (await count()) < 2; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await count()).toBe(2);
  });
});
