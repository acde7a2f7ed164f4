// Test helpers of the users and tasks API: its server, requests and account factories.
import { afterAll, beforeAll } from 'vitest';
import type { DatabaseKind } from '../support/databases.js';
import { send, type Answer, type RequestOptions } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
export type { Answer, RequestOptions, TestServer };

/** Lower scrypt cost through the documented variable; a fixed key so PostgreSQL has API keys. */
export const TEST_ENV: Record<string, string> = {
  SERVICES: 'tasks',
  USERS_SCRYPT_N: '1024',
  QUARTET_SECRET_KEY: '5f'.repeat(32),
  // Tests register and log in far more often than a person; the brute-force test lowers these.
  USERS_REGISTER_ADDRESS_LIMIT: '100000',
  USERS_LOGIN_ADDRESS_LIMIT: '100000',
  USERS_RESET_ADDRESS_LIMIT: '100000',
};

export function startTasksServer(kind: DatabaseKind, env: Record<string, string> = {}): Promise<TestServer> {
  return startTestServer(kind, { env: { ...TEST_ENV, ...env } });
}

/** A request to `base + path`, or injected when `base` is an app (test/support/http.ts). */
export const call = send;

/** Before the describe's tests: a server (`env` on top of TEST_ENV) and an account made with `prefix`; closed after. */
export function openTasksServer(
  kind: DatabaseKind,
  prefix: string,
  ready: (opened: { server: TestServer; me: Account }) => void,
  env: Record<string, string> = {},
): void {
  let close = async () => {};
  beforeAll(async () => {
    const server = await startTasksServer(kind, env);
    close = () => server.close();
    ready({ server, me: await registerAndLogin(server.url, prefix) });
  });
  afterAll(() => close());
}

let counter = 0;

export function newPerson(prefix = 'user') {
  counter += 1;
  const tag = `${prefix}${process.pid}x${counter}`;
  return {
    first_name: 'Ada',
    last_name: 'Lovelace',
    email: `${tag}@example.test`,
    username: tag,
    password: `correct horse ${tag} battery`,
  };
}

export interface Account {
  id: string;
  email: string;
  password: string;
  token: string;
}

export async function registerAndLogin(base: string, prefix = 'user'): Promise<Account> {
  const person = newPerson(prefix);
  const registered = await call(base, 'POST', '/api/users/register', { json: person });
  if (registered.status !== 201) throw new Error(`register: ${registered.status} ${JSON.stringify(registered.body)}`);
  return {
    id: registered.body.user.id,
    email: person.email,
    password: person.password,
    ...(await login(base, person.email, person.password)),
  };
}

export async function login(base: string, email: string, password: string): Promise<{ token: string }> {
  const answer = await call(base, 'POST', '/api/users/login', { json: { email, password } });
  if (answer.status !== 200) throw new Error(`login: ${answer.status} ${JSON.stringify(answer.body)}`);
  return { token: answer.body.token };
}

/** An admin made the documented way: the bootstrap variables (see startTasksServer env). */
export const ADMIN = { email: 'root@example.test', password: 'admin password for tests' };
export const ADMIN_ENV = { USERS_ADMIN_EMAIL: ADMIN.email, USERS_ADMIN_PASSWORD: ADMIN.password };

/** A server (`env` on top of TEST_ENV and ADMIN_ENV) and its bootstrap admin, logged in. */
export async function startTasksServerWithAdmin(
  kind: DatabaseKind,
  env: Record<string, string> = {},
): Promise<{ server: TestServer; admin: Account }> {
  const server = await startTasksServer(kind, { ...ADMIN_ENV, ...env });
  const { token } = await login(server.url, ADMIN.email, ADMIN.password);
  const id = (await call(server.url, 'GET', '/api/users/all', { token })).body.results[0].id;
  return { server, admin: { id, email: ADMIN.email, password: ADMIN.password, token } };
}

/** Smallest real images of each accepted type. */
export const IMAGES = {
  png: Buffer.from(
    '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489' +
      '0000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082',
    'hex',
  ),
  gif: Buffer.from('47494638396101000100800000ffffff00000021f90401000000002c00000000010001000002024401003b', 'hex'),
  jpeg: Buffer.from(
    'ffd8ffe000104a46494600010100000100010000' +
      'ffdb004300080606070605080707070909080a0c140d0c0b0b0c1912130f141d1a1f1e1d1a1c1c20242e2720222c231c1c2837' +
      '292c30313434341f27393d38323c2e333432' +
      'ffc0000b080001000101011100' +
      'ffc4001f0000010501010101010100000000000000000102030405060708090a0b' +
      'ffda0008010100003f00d2cf20' +
      'ffd9',
    'hex',
  ),
  webp: Buffer.from('524946461a000000574542505650384c0d0000002f0000001007101111888808', 'hex'),
};

export function dataUrl(type: string, bytes: Buffer): string {
  return `data:${type};base64,${bytes.toString('base64')}`;
}

/** The newest reset code mailed to `email`, read from the outbox as the operator's CLI does. */
export async function resetCodeFor(server: TestServer, email: string, previous?: string): Promise<string> {
  for (let attempt = 0; attempt < 250; attempt++) {
    const mail = await server.db.kysely
      .selectFrom('mail_outbox')
      .select('body')
      .where('recipient', '=', email)
      .orderBy('id', 'desc')
      .executeTakeFirst();
    const code = mail && /Reset code: (\S+)/.exec(mail.body)?.[1];
    if (code && code !== previous) return code;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no reset mail for ${email}`);
}
