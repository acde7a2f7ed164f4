// SQLite out of space (SQLITE_FULL, simulated with max_page_count on the server's one connection)
// or read-only: every write answers 507 or 503 in its service's shape, the process stays up,
// nothing is half-written, and writes work again once space is back, without a restart.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../support/http.js';
import { chatBody, postJson, startNode, type Node } from '../proxy/forward-helpers.js';
import { Client, QUOTES_ENV } from '../quotes/helpers.js';

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
let people = 0;
const person = () => {
  people += 1;
  return {
    email: `full${people}@example.test`,
    username: `full${people}`,
    password: `a long password number ${people}`,
    first_name: 'Disk',
    last_name: 'Full',
  };
};

describe('SQLite out of space or read-only', () => {
  let node: Node;
  let quoter: Client;
  beforeAll(async () => {
    node = await startNode('sqlite', { env: { ...QUOTES_ENV, SERVICES: 'proxy,tasks,quotes,docs' } });
    quoter = await Client.create(node.url);
  });
  afterAll(() => node?.close());

  const pragma = (text: string) => sql.raw(`pragma ${text}`).execute(node.server.db.kysely);

  it('answers 507 in each service shape while full and serves again once space is freed', async () => {
    const funded = 10_000_000;
    const keys = await Promise.all(Array.from({ length: 4 }, () => node.account(funded)));
    const pages = (await pragma('page_count')).rows[0] as { page_count: number };
    await pragma(`max_page_count = ${pages.page_count + 8}`);

    const full = { billed: undefined as any, users: undefined as any, quotes: undefined as any };
    for (let i = 0; i < 400 && !(full.billed && full.users && full.quotes); i++) {
      const long = { messages: [{ role: 'user', content: `question ${i} `.repeat(300) }] };
      const billed = await postJson(`${node.url}/v1/chat/completions`, chatBody(long), auth(keys[i % keys.length]));
      expect([200, 507]).toContain(billed.status);
      if (billed.status === 507) full.billed ??= billed;
      const users = await postJson(`${node.url}/api/users/register`, person());
      expect([201, 507]).toContain(users.status);
      if (users.status === 507) full.users ??= users;
      const project = await quoter.call('POST', '/1/projects', {
        json: { name: `while full ${i}`, base_locale: 'en-US', target_locales: ['de-DE'] },
      });
      expect([201, 507]).toContain(project.status);
      if (project.status === 507) full.quotes ??= project;
    }
    expect(full.billed?.json.error).toMatchObject({ code: 'insufficient_storage', type: 'api_error' });
    expect(full.billed.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(full.users?.headers.get('content-type')).toContain('application/problem+json');
    expect(full.users.json).toMatchObject({ status: 507, code: 'insufficient_storage' });
    expect(full.quotes?.json.meta.status).toBe(507);
    expect((await request(`${node.url}/healthz`)).status).toBe(200);

    await pragma('max_page_count = 1073741823');
    expect((await postJson(`${node.url}/v1/chat/completions`, chatBody(), auth(keys[0]))).status).toBe(200);
    expect((await postJson(`${node.url}/api/users/register`, person())).status).toBe(201);
    const again = await quoter.call('POST', '/1/projects', {
      json: { name: 'after', base_locale: 'en-US', target_locales: ['de-DE'] },
    });
    expect(again.status).toBe(201);

    // Nothing half-written: no reservation left, every balance fell by exactly what was charged.
    const ledger = await node.ledger();
    expect(ledger.filter((row) => row.status === 'reserved')).toEqual([]);
    let spent = 0;
    for (const key of keys) {
      const account = await node.balance(key);
      expect(account).toMatchObject({ reserved: 0, balance: funded - account.spent });
      spent += account.spent;
    }
    const settled = ledger.filter((row) => row.status === 'settled');
    expect(settled.reduce((sum, row) => sum + Number(row.charged_msat), 0)).toBe(spent);
    expect((await pragma('integrity_check')).rows).toEqual([{ integrity_check: 'ok' }]);
  }, 120_000);

  it('answers 503 while the database is read-only and serves again once it is writable', async () => {
    await pragma('max_page_count = 1073741823');
    await pragma('query_only = 1');
    const refused = await postJson(`${node.url}/api/users/register`, person());
    expect(refused.status).toBe(503);
    expect(refused.json).toMatchObject({ status: 503, code: 'database_unavailable' });
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    const readable = await request(`${node.url}/v1/models`);
    expect(readable.status).toBe(200);
    await pragma('query_only = 0');
    expect((await postJson(`${node.url}/api/users/register`, person())).status).toBe(201);
  });
});
