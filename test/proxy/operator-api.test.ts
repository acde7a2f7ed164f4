// Routstr's operator API (/admin/api/…) as routstr-cli and Routstr's admin UI use it: login and
// its limits, session and CLI tokens (expiry, revocation), the password, the admin page's cookie
// with its CSRF token, balances per mint, withdrawal of the earnings, the keys and their limits,
// transactions, Lightning invoices, and the audit log of every change. On both databases.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { Accounts } from '../../src/users/accounts.js';
import { databaseKinds } from '../support/databases.js';
import { chatBody, postJson, startNode, type Node } from './forward-helpers.js';
import { openAccount, receiveAtMint } from './wallet-helpers.js';

const PASSWORD = 'operator passphrase 1';

interface Answer {
  status: number;
  json: any;
  headers: Headers;
}

async function api(node: Node, method: string, path: string, token: string | null, body?: unknown): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${node.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : null, headers: response.headers };
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('operator API without a password', () => {
  it('has no login to offer: 404, while every other route still asks for a token', async () => {
    const node = await startNode('sqlite');
    try {
      const login = await api(node, 'POST', '/admin/api/login', null, { password: 'anything at all' });
      expect(login.status).toBe(404);
      expect(login.json.detail).toContain('PROXY_ADMIN_PASSWORD');
      expect((await api(node, 'GET', '/admin/api/balances', null)).status).toBe(401);
    } finally {
      await node.close();
    }
  });
});

describe.each(databaseKinds)('operator API on %s', (kind) => {
  let mint: DevMint;
  let node: Node;
  let token: string;
  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    node = await startNode(kind, {
      env: { SERVICES: 'proxy,tasks', PROXY_MINTS: mint.url, PROXY_ADMIN_PASSWORD: PASSWORD },
    });
    const login = await api(node, 'POST', '/admin/api/login', null, { password: PASSWORD });
    expect(login.status).toBe(200);
    token = login.json.token;
  }, 60_000);
  afterAll(async () => {
    await node?.close();
    await mint?.close();
  });

  it('logs in with the password as Routstr answers, and refuses a wrong one with detail', async () => {
    const login = await api(node, 'POST', '/admin/api/login', null, { password: PASSWORD });
    expect(login.status).toBe(200);
    expect(login.json).toEqual({ ok: true, token: expect.any(String), expires_in: 12 * 3600 });
    const wrong = await api(node, 'POST', '/admin/api/login', null, { password: 'not it at all' });
    expect(wrong.status).toBe(401);
    expect(wrong.json.detail).toBe('Invalid password');
    const invalid = await api(node, 'POST', '/admin/api/login', null, { pass: PASSWORD });
    expect(invalid.status).toBe(422);
    expect(invalid.json.detail[0].loc).toEqual(['body', 'password']);
  });

  it('refuses every route without a valid token, before reading the body', async () => {
    const routes: [string, string][] = [
      ['GET', '/admin/api/balances'],
      ['GET', '/admin/api/cli-tokens'],
      ['POST', '/admin/api/cli-tokens'],
      ['DELETE', '/admin/api/cli-tokens/1'],
      ['PATCH', '/admin/api/password'],
      ['POST', '/admin/api/logout'],
      ['POST', '/admin/withdraw'],
      ['GET', '/admin/api/temporary-balances'],
      ['PATCH', `/admin/api/apikeys/${'a'.repeat(64)}`],
      ['GET', '/admin/api/transactions'],
      ['GET', '/admin/api/lightning-invoices'],
      ['GET', '/admin/api/audit-log'],
    ];
    for (const [method, path] of routes) {
      for (const credential of [null, 'not-a-token']) {
        const answer = await api(node, method, path, credential, method === 'GET' ? undefined : { junk: true });
        expect(answer.status, `${method} ${path}`).toBe(401);
        expect(answer.json.detail).toMatch(/^Unauthorized/);
        expect(answer.headers.get('www-authenticate')).toContain('Bearer');
      }
    }
  });

  it('creates, lists, uses and revokes CLI tokens; an expired token is refused', async () => {
    const created = await api(node, 'POST', '/admin/api/cli-tokens', token, { name: 'laptop', expires_in_days: 30 });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ name: 'laptop', token: expect.any(String), id: expect.any(String) });
    const cli = created.json.token as string;
    expect(created.json.expires_at - created.json.created_at).toBe(30 * 86400);

    const listed = await api(node, 'GET', '/admin/api/cli-tokens', cli);
    expect(listed.status).toBe(200);
    const mine = listed.json.find((t: any) => t.id === created.json.id);
    expect(mine.token_preview).toBe(`${cli.slice(0, 8)}...${cli.slice(-4)}`);
    expect(JSON.stringify(listed.json)).not.toContain(cli);
    expect(mine.last_used_at).not.toBeNull();

    expect((await api(node, 'POST', '/admin/api/cli-tokens', token, { name: '  ' })).status).toBe(400);
    expect((await api(node, 'DELETE', '/admin/api/cli-tokens/999999', token)).status).toBe(404);
    expect((await api(node, 'DELETE', '/admin/api/cli-tokens/abc', token)).status).toBe(404);

    const revoked = await api(node, 'DELETE', `/admin/api/cli-tokens/${created.json.id}`, token);
    expect(revoked.json).toEqual({ ok: true, deleted_id: created.json.id });
    expect((await api(node, 'GET', '/admin/api/balances', cli)).status).toBe(401);

    const expiring = await api(node, 'POST', '/admin/api/cli-tokens', token, { name: 'short' });
    expect(expiring.json.expires_at).toBeNull();
    await node.server.db.kysely
      .updateTable('proxy_operator_tokens')
      .set({ expires_at: Date.now() - 1 })
      .where('id', '=', Number(expiring.json.id))
      .execute();
    expect((await api(node, 'GET', '/admin/api/balances', expiring.json.token)).status).toBe(401);
  });

  it('changes the password: the old one stops working, sessions end, CLI tokens stay', async () => {
    const session = (await api(node, 'POST', '/admin/api/login', null, { password: PASSWORD })).json.token;
    const cli = (await api(node, 'POST', '/admin/api/cli-tokens', session, { name: 'ci' })).json.token;
    const short = await api(node, 'PATCH', '/admin/api/password', session, {
      current_password: PASSWORD,
      new_password: 'short',
    });
    expect(short.status).toBe(400);
    expect(short.json.detail).toBe('New password must be at least 12 characters');
    const wrong = await api(node, 'PATCH', '/admin/api/password', session, {
      current_password: 'wrong password',
      new_password: 'a new passphrase',
    });
    expect(wrong.status).toBe(401);
    const changed = await api(node, 'PATCH', '/admin/api/password', session, {
      current_password: PASSWORD,
      new_password: 'a new passphrase',
    });
    expect(changed.json).toEqual({ ok: true, message: 'Password updated successfully' });
    expect((await api(node, 'GET', '/admin/api/balances', session)).status).toBe(401);
    expect((await api(node, 'GET', '/admin/api/balances', cli)).status).toBe(200);
    expect((await api(node, 'POST', '/admin/api/login', null, { password: PASSWORD })).status).toBe(401);
    const again = await api(node, 'POST', '/admin/api/login', null, { password: 'a new passphrase' });
    expect(again.status).toBe(200);
    token = again.json.token;
    // The stored hash is no secret in the audit log, and the change is there.
    const audit = await api(node, 'GET', '/admin/api/audit-log?action=password.update', token);
    expect(audit.json.entries).toHaveLength(1);
    expect(audit.json.entries[0].actor).toBe('password');
    // Back to the first password for the other tests.
    await api(node, 'PATCH', '/admin/api/password', token, {
      current_password: 'a new passphrase',
      new_password: PASSWORD,
    });
    token = (await api(node, 'POST', '/admin/api/login', null, { password: PASSWORD })).json.token;
  });

  it('logs out: the token ends', async () => {
    const session = (await api(node, 'POST', '/admin/api/login', null, { password: PASSWORD })).json.token;
    expect((await api(node, 'POST', '/admin/api/logout', session)).json).toEqual({ ok: true });
    expect((await api(node, 'GET', '/admin/api/balances', session)).status).toBe(401);
  });

  it("accepts the users API admin's token, not a plain user's", async () => {
    const accounts = new Accounts(node.server.db, node.server.config.users);
    const email = `root-${kind}@example.com`;
    await accounts.register(
      { email, username: `root${kind}`, first_name: 'R', last_name: 'A', password: 'Very-long-admin-passphrase-1' },
      'admin',
    );
    await accounts.register({
      email: `plain-${kind}@example.com`,
      username: `plain${kind}`,
      first_name: 'P',
      last_name: 'U',
      password: 'Very-long-user-passphrase-2',
    });
    const userLogin = async (address: string, password: string) =>
      (await postJson(`${node.url}/api/users/login`, { email: address, password })).json.token as string;
    const admin = await userLogin(email, 'Very-long-admin-passphrase-1');
    const plain = await userLogin(`plain-${kind}@example.com`, 'Very-long-user-passphrase-2');
    expect((await api(node, 'GET', '/admin/api/balances', admin)).status).toBe(200);
    expect((await api(node, 'GET', '/admin/api/balances', plain)).status).toBe(401);
  });

  it('answers the page session with its CSRF token only, and only from this origin', async () => {
    const form = await fetch(`${node.url}/admin/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `password=${encodeURIComponent(PASSWORD)}`,
      redirect: 'manual',
    });
    const cookie = form.headers.get('set-cookie')!.split(';')[0];
    const page = await (await fetch(`${node.url}/admin/`, { headers: { cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1];
    const read = await fetch(`${node.url}/admin/api/balances`, { headers: { cookie } });
    expect(read.status).toBe(200);
    const create = (headers: Record<string, string>) =>
      fetch(`${node.url}/admin/api/cli-tokens`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ name: 'from the page' }),
      });
    expect((await create({})).status).toBe(403);
    expect((await create({ 'x-csrf-token': `${csrf}x` })).status).toBe(403);
    expect((await create({ 'x-csrf-token': csrf, origin: 'https://evil.example' })).status).toBe(403);
    expect((await create({ 'x-csrf-token': csrf })).status).toBe(200);
  });

  it('shows balances per mint, withdraws the earnings, and lists what moved', async () => {
    const key = await openAccount(node.url, await mint.mintToken(100));
    node.upstream.faults.completionTokens = 800;
    const chat = await postJson(`${node.url}/v1/chat/completions`, chatBody({ max_tokens: 900 }), {
      authorization: `Bearer ${key}`,
    });
    expect(chat.status).toBe(200);
    node.upstream.faults.completionTokens = null;
    const account = await node.balance(key);
    const spentSat = account.spent / 1000;
    expect(spentSat).toBeGreaterThanOrEqual(1);

    const balances = await api(node, 'GET', '/admin/api/balances', token);
    expect(balances.status).toBe(200);
    const row = balances.json.find((b: any) => b.mint_url === mint.url && b.unit === 'sat');
    expect(row.wallet_balance).toBe(100);
    expect(row.user_balance).toBe(Math.ceil(account.balance / 1000));
    expect(row.owner_balance).toBe(row.wallet_balance - row.user_balance);

    const tooMuch = await api(node, 'POST', '/admin/withdraw', token, { amount: 101, mint_url: mint.url });
    expect(tooMuch.status).toBe(400);
    expect(typeof tooMuch.json.detail).toBe('string');
    expect((await api(node, 'POST', '/admin/withdraw', token, { amount: 0 })).status).toBe(400);
    expect((await api(node, 'POST', '/admin/withdraw', token, { amount: 'ten' })).status).toBe(422);
    const unknownMint = await api(node, 'POST', '/admin/withdraw', token, { amount: 1, mint_url: 'http://x.invalid' });
    expect(unknownMint.status).toBe(400);

    const withdrawn = await api(node, 'POST', '/admin/withdraw', token, { amount: 1 });
    expect(withdrawn.status).toBe(200);
    expect(withdrawn.json.mint_url).toBe(mint.url);
    expect(await receiveAtMint(mint.url, withdrawn.json.token)).toBe(1);

    const transactions = await api(node, 'GET', '/admin/api/transactions?limit=10', token);
    expect(transactions.status).toBe(200);
    const kinds = transactions.json.transactions.map((t: any) => `${t.type}:${t.source}:${t.status}`);
    expect(kinds).toContain('out:admin:issued');
    expect(kinds).toContain('in:apikey:collected');
    const out = transactions.json.transactions.find((t: any) => t.source === 'admin');
    expect(out).toMatchObject({ amount: 1, unit: 'sat', mint_url: mint.url, token: null });
    expect(JSON.stringify(transactions.json)).not.toContain(withdrawn.json.token);
    // Routstr's UI knows four statuses; each filter finds its own.
    for (const t of transactions.json.transactions) {
      expect(['issued', 'collected', 'swept', 'pending']).toContain(t.status);
    }
    for (const status of ['issued', 'collected', 'pending', 'swept']) {
      const filtered = await api(node, 'GET', `/admin/api/transactions?status=${status}`, token);
      expect(
        filtered.json.transactions.every((t: any) => t.status === status),
        status,
      ).toBe(true);
    }
    const issued = await api(node, 'GET', '/admin/api/transactions?status=issued&source=admin', token);
    expect(issued.json.total).toBe(1);
    const onlyOut = await api(node, 'GET', '/admin/api/transactions?type=out', token);
    expect(onlyOut.json.transactions.every((t: any) => t.type === 'out')).toBe(true);
    expect(onlyOut.json.total).toBe(onlyOut.json.transactions.length);

    const audit = await api(node, 'GET', '/admin/api/audit-log?action=earnings.withdraw', token);
    expect(audit.json.entries[0].after).toEqual({ amount_msat: 1000, mint_url: mint.url });
  });

  it('lists keys with totals and search, and sets a child key’s limits', async () => {
    const parent = await node.account(50_000);
    const children = await postJson(
      `${node.url}/v1/balance/child-key`,
      { count: 1, balance_limit: 5000, balance_limit_reset: 'daily' },
      { authorization: `Bearer ${parent}` },
    );
    expect(children.status).toBe(200);
    const child = children.json.api_keys[0] as string;

    const found = await api(node, 'GET', `/admin/api/temporary-balances?search=${sha256(parent).slice(0, 20)}`, token);
    expect(found.status).toBe(200);
    expect(found.json.total).toBe(1);
    expect(found.json.balances[0]).toMatchObject({
      hashed_key: sha256(parent),
      balance: 50_000,
      parent_key_hash: null,
    });
    expect(found.json.totals.total_balance).toBe(50_000);

    const all = await api(node, 'GET', '/admin/api/temporary-balances?limit=500', token);
    const childRow = all.json.balances.find((b: any) => b.hashed_key === sha256(child));
    expect(childRow).toMatchObject({
      parent_key_hash: sha256(parent),
      balance_limit: 5000,
      balance_limit_reset: 'daily',
    });
    expect(all.json.total).toBe(all.json.balances.length);
    const wildcard = await api(node, 'GET', '/admin/api/temporary-balances?search=%25', token);
    expect(wildcard.json.total).toBe(0);

    const patched = await api(node, 'PATCH', `/admin/api/apikeys/${sha256(child)}`, token, {
      balance_limit: 9000,
      balance_limit_reset: 'weekly',
      validity_date: 4_102_444_800,
    });
    expect(patched.status).toBe(200);
    expect(patched.json).toEqual({
      hashed_key: sha256(child),
      balance_limit: 9000,
      balance_limit_reset: 'weekly',
      validity_date: 4_102_444_800,
    });
    const stored = await node.server.db.kysely
      .selectFrom('proxy_child_keys')
      .select(['limit_msat', 'reset_period', 'expires_at'])
      .where('key_hash', '=', sha256(child))
      .executeTakeFirstOrThrow();
    expect([Number(stored.limit_msat), stored.reset_period, Number(stored.expires_at)]).toEqual([
      9000,
      'weekly',
      4_102_444_800_000,
    ]);
    expect((await api(node, 'PATCH', `/admin/api/apikeys/${sha256(parent)}`, token, { balance_limit: 1 })).status).toBe(
      400,
    );
    expect((await api(node, 'PATCH', `/admin/api/apikeys/${'0'.repeat(64)}`, token, { balance_limit: 1 })).status).toBe(
      404,
    );
    const bad = await api(node, 'PATCH', `/admin/api/apikeys/${sha256(child)}`, token, {
      balance_limit_reset: 'hourly',
    });
    expect(bad.status).toBe(422);
    const audit = await api(node, 'GET', `/admin/api/audit-log?target=${sha256(child)}`, token);
    expect(audit.json.entries[0]).toMatchObject({
      action: 'apikey.update',
      before: { balance_limit: 5000, balance_limit_reset: 'daily' },
      after: { balance_limit: 9000, balance_limit_reset: 'weekly' },
    });
  });

  it('lists Lightning invoices with filters', async () => {
    const created = await postJson(`${node.url}/v1/balance/lightning/invoice`, { amount_sats: 21, purpose: 'create' });
    expect(created.status).toBe(200);
    const listed = await api(node, 'GET', '/admin/api/lightning-invoices', token);
    expect(listed.status).toBe(200);
    const invoice = listed.json.invoices.find((i: any) => i.id === created.json.invoice_id);
    expect(invoice).toMatchObject({
      amount_sats: 21,
      status: 'pending',
      purpose: 'create',
      bolt11: created.json.bolt11,
    });
    const paid = await api(node, 'GET', '/admin/api/lightning-invoices?status=paid', token);
    expect(paid.json.invoices.some((i: any) => i.id === created.json.invoice_id)).toBe(false);
    const search = await api(node, 'GET', `/admin/api/lightning-invoices?search=${created.json.invoice_id}`, token);
    expect(search.json.total).toBe(1);
    expect((await api(node, 'GET', '/admin/api/lightning-invoices?limit=100000', token)).status).toBe(422);
  });

  it('limits login attempts per address and says when to come back; a right password clears the count', async () => {
    for (let i = 0; i < 6; i++) await api(node, 'POST', '/admin/api/login', null, { password: 'guessing' });
    expect((await api(node, 'POST', '/admin/api/login', null, { password: PASSWORD })).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      statuses.push((await api(node, 'POST', '/admin/api/login', null, { password: 'guessing' })).status);
    }
    expect(statuses).toEqual([...Array(10).fill(401), 429]);
    const last = await api(node, 'POST', '/admin/api/login', null, { password: 'guessing' });
    expect(last.status).toBe(429);
    expect(Number(last.headers.get('retry-after'))).toBeGreaterThan(0);
    // Even the right password waits now.
    expect((await api(node, 'POST', '/admin/api/login', null, { password: PASSWORD })).status).toBe(429);
    // A token already given keeps working.
    expect((await api(node, 'GET', '/admin/api/balances', token)).status).toBe(200);
  });
});
