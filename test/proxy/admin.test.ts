// The admin page in Chromium (playwright-core): the unconfigured page, login, totals that match
// the database, withdrawal of the node's earnings as a Cashu token; and over HTTP: CSRF, the
// login rate limit, escaping, and the bearer token of an admin of the users and tasks API.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { Accounts } from '../../src/users/accounts.js';
import { browserTests, launchBrowser } from '../support/browser.js';
import { databaseKinds } from '../support/databases.js';
import { chatBody, postJson, startNode, type Node } from './forward-helpers.js';
import { openAccount, receiveAtMint } from './wallet-helpers.js';

const PASSWORD = 'correct horse battery staple';

describe('admin page without a password', () => {
  it('says how to set one and shows nothing else', async () => {
    const node = await startNode('sqlite');
    try {
      const page = await fetch(`${node.url}/admin/`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toContain('text/html');
      const html = await page.text();
      expect(html).toContain('PROXY_ADMIN_PASSWORD');
      expect(html).not.toContain('total-held');
      expect(html).not.toContain('<form');
      const login = await fetch(`${node.url}/admin/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'password=anything',
      });
      expect(login.status).toBe(404);
    } finally {
      await node.close();
    }
  });
});

describe('admin page', () => {
  let mint: DevMint;
  let node: Node;
  let browser: Browser;
  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    node = await startNode('sqlite', {
      env: { SERVICES: 'proxy,tasks', PROXY_MINTS: mint.url, PROXY_ADMIN_PASSWORD: PASSWORD },
    });
    if (browserTests) browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await node?.close();
    await mint?.close();
  });

  async function dbTotals() {
    const db = node.server.db.kysely;
    const accounts = await db.selectFrom('proxy_accounts').select(['balance_msat', 'reserved_msat']).execute();
    const requests = await db.selectFrom('proxy_requests').select(['charged_msat', 'status']).execute();
    const withdrawals = await db.selectFrom('proxy_withdrawals').select(['amount_msat', 'status']).execute();
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const earned = sum(requests.filter((r) => r.status === 'settled').map((r) => Number(r.charged_msat)));
    const withdrawn = sum(withdrawals.filter((w) => w.status !== 'failed').map((w) => Number(w.amount_msat)));
    return {
      held: sum(accounts.map((a) => Number(a.balance_msat))),
      reserved: sum(accounts.map((a) => Number(a.reserved_msat))),
      earned,
      withdrawn,
      earnings: earned - withdrawn,
    };
  }

  it('logs in, shows totals that match the database, and withdraws the earnings as a token', async ({ skip }) => {
    skip(!browserTests, 'no browser in the fast loop');
    // A user pays 200 sat into the node and makes two large requests.
    const key = await openAccount(node.url, await mint.mintToken(200));
    node.upstream.faults.completionTokens = 800;
    for (let i = 0; i < 2; i++) {
      expect(
        (
          await postJson(`${node.url}/v1/chat/completions`, chatBody({ max_tokens: 900 }), {
            authorization: `Bearer ${key}`,
          })
        ).status,
      ).toBe(200);
    }
    node.upstream.resetFaults();
    const before = await dbTotals();
    expect(before.earnings).toBeGreaterThan(3000);

    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${node.url}/admin/`);
    await page.fill('input[name=password]', 'wrong password!!');
    await page.click('#login-form button');
    await expect(page.textContent('body')).resolves.toContain('Wrong password.');
    await page.fill('input[name=password]', PASSWORD);
    await page.click('#login-form button');
    await page.waitForSelector('#total-held');

    const shown = async (id: string) => Number(await page.getAttribute(`#${id}`, 'data-msat'));
    expect(await shown('total-held')).toBe(before.held);
    expect(await shown('total-reserved')).toBe(before.reserved);
    expect(await shown('total-earned')).toBe(before.earned);
    expect(await shown('total-earnings')).toBe(before.earnings);
    expect(Number(await page.getAttribute(`.mint-balance[data-mint="${mint.url}"]`, 'data-amount'))).toBe(200);
    expect(await page.textContent('body')).toContain(key.slice(0, 12));
    expect((await page.textContent('body'))!.split('/v1/chat/completions').length - 1).toBeGreaterThanOrEqual(2);

    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'quartet_admin')!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/admin' });

    const sats = Math.floor(before.earnings / 1000);
    expect(await page.inputValue('input[name=amount_sat]')).toBe(String(sats));
    await page.click('#withdraw-form button');
    const token = await page.inputValue('#withdraw-token');
    expect(token).toMatch(/^cashu[AB]/);
    expect(await receiveAtMint(mint.url, token)).toBe(sats);

    const after = await dbTotals();
    expect(after.withdrawn).toBe(sats * 1000);
    expect(after.earnings).toBe(before.earnings - sats * 1000);
    expect(await shown('total-earnings')).toBe(after.earnings);
    const row = await node.server.db.kysely.selectFrom('proxy_withdrawals').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'issued', created_by: 'password', amount_msat: sats * 1000 });
    const audited = await node.server.db.kysely.selectFrom('proxy_audit_log').selectAll().executeTakeFirstOrThrow();
    expect(audited).toMatchObject({ actor: 'password', action: 'earnings.withdraw', target: String(row.id) });

    // More than the earnings is refused by the server too (not only by the form's max).
    await page.$eval('input[name=amount_sat]', (input) => input.removeAttribute('max'));
    await page.fill('input[name=amount_sat]', '1000');
    await page.click('#withdraw-form button');
    await expect(page.textContent('body')).resolves.toContain("node's earnings are");

    await page.goto(`${node.url}/admin/`);
    await page.click('text=Log out');
    await page.waitForSelector('#login-form');
    await context.close();
  }, 60_000);

  it('refuses forms without the CSRF token or from another origin', async () => {
    const login = await fetch(`${node.url}/admin/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `password=${encodeURIComponent(PASSWORD)}`,
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get('set-cookie')!.split(';')[0];
    const noCsrf = await fetch(`${node.url}/admin/withdraw-ecash`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: `amount_sat=1&mint=${encodeURIComponent(mint.url)}`,
    });
    expect(noCsrf.status).toBe(403);
    const page = await (await fetch(`${node.url}/admin/`, { headers: { cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1];
    const foreign = await fetch(`${node.url}/admin/withdraw-ecash`, {
      method: 'POST',
      headers: { cookie, origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: `csrf=${csrf}&amount_sat=1&mint=${encodeURIComponent(mint.url)}`,
    });
    expect(foreign.status).toBe(403);
    const crossLogin = await fetch(`${node.url}/admin/login`, {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: 'password=x',
    });
    expect(crossLogin.status).toBe(403);
  });

  it('escapes everything it shows', async ({ skip }) => {
    skip(!browserTests, 'no browser in the fast loop');
    const db = node.server.db.kysely;
    const now = Date.now();
    const account = await db
      .insertInto('proxy_accounts')
      .values({
        key_hash: 'x'.repeat(64),
        key_prefix: '<script>alert(1)</script>',
        balance_msat: 0,
        mint_url: '"><img src=x onerror=alert(2)>',
        unit: 'sat',
        created_at: now,
        last_used_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    // Its request, listed under "Billed requests" with the key's prefix and the model's name.
    await db
      .insertInto('proxy_requests')
      .values({
        account_id: account.id,
        path: '/v1/chat/completions',
        model: '"><img src=x onerror=alert(3)>',
        stream: 0,
        payment: 'key',
        status: 'settled',
        reserved_msat: 0,
        created_at: now,
        heartbeat_at: now,
        settled_at: now,
      })
      .execute();
    const context = await browser.newContext();
    const page = await context.newPage();
    let dialogs = 0;
    page.on('dialog', (dialog) => {
      dialogs++;
      void dialog.dismiss();
    });
    await page.goto(`${node.url}/admin/`);
    await page.fill('input[name=password]', PASSWORD);
    await page.click('#login-form button');
    await page.waitForSelector('#total-held');
    expect(await page.textContent('#requests')).toContain('<script>alert(1)</script>');
    expect(await page.textContent('#requests')).toContain('"><img src=x onerror=alert(3)>');
    expect(await page.locator('img').count()).toBe(0);
    expect(dialogs).toBe(0);
    await context.close();
  }, 30_000);

  it("accepts a users and tasks API admin's bearer token, not a plain user's", async () => {
    const accounts = new Accounts(node.server.db, node.server.config.users);
    await accounts.register(
      {
        email: 'root@example.com',
        username: 'root',
        first_name: 'Root',
        last_name: 'Admin',
        password: 'Very-long-admin-passphrase-1',
      },
      'admin',
    );
    await accounts.register({
      email: 'user@example.com',
      username: 'plain',
      first_name: 'Plain',
      last_name: 'User',
      password: 'Very-long-user-passphrase-2',
    });
    const login = async (email: string, password: string) =>
      (await postJson(`${node.url}/api/users/login`, { email, password })).json.token as string;
    const admin = await login('root@example.com', 'Very-long-admin-passphrase-1');
    const user = await login('user@example.com', 'Very-long-user-passphrase-2');
    const asAdmin = await (await fetch(`${node.url}/admin/`, { headers: { authorization: `Bearer ${admin}` } })).text();
    expect(asAdmin).toContain('total-held');
    expect(asAdmin).toMatch(/Signed in as user:\d+/);
    const asUser = await (await fetch(`${node.url}/admin/`, { headers: { authorization: `Bearer ${user}` } })).text();
    expect(asUser).not.toContain('total-held');
  });

  it('keeps sessions in the database (another process honours them), cookies Secure behind https', async () => {
    const other = await startNode('sqlite', {
      database: node.server.database,
      upstream: node.upstream,
      env: { SERVICES: 'proxy', PROXY_MINTS: mint.url, PROXY_ADMIN_PASSWORD: PASSWORD, TRUST_PROXY: 'true' },
    });
    try {
      const login = await fetch(`${other.url}/admin/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-proto': 'https' },
        body: `password=${encodeURIComponent(PASSWORD)}`,
      });
      expect(login.status).toBe(303);
      const setCookie = login.headers.get('set-cookie')!;
      // Attributes in any order (RFC 6265): all three, with Secure because the request came over https.
      const attributes = setCookie.split(';').map((part) => part.trim());
      expect(attributes).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Strict', 'Secure']));
      const cookie = setCookie.split(';')[0];
      const elsewhere = await (await fetch(`${node.url}/admin/`, { headers: { cookie } })).text();
      expect(elsewhere).toContain('total-held');
      const logout = await fetch(`${node.url}/admin/logout`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: `csrf=${/name="csrf" value="([^"]+)"/.exec(elsewhere)![1]}`,
      });
      expect(logout.status).toBe(303);
      expect(await (await fetch(`${other.url}/admin/`, { headers: { cookie } })).text()).not.toContain('total-held');
    } finally {
      await other.server.close({ keepDatabase: true });
    }
  });

  it('limits login attempts', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const answer = await fetch(`${node.url}/admin/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'password=guess',
      });
      statuses.push(answer.status);
    }
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(10);
  });
});

describe.each(databaseKinds)('admin totals on %s', (kind) => {
  it('match the database after billed requests', async () => {
    const node = await startNode(kind, { env: { PROXY_ADMIN_PASSWORD: PASSWORD } });
    try {
      const keys = [await node.account(500_000), await node.account(70_000)];
      for (const key of keys) {
        expect(
          (await postJson(`${node.url}/v1/chat/completions`, chatBody(), { authorization: `Bearer ${key}` })).status,
        ).toBe(200);
      }
      const login = await fetch(`${node.url}/admin/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `password=${encodeURIComponent(PASSWORD)}`,
      });
      const cookie = login.headers.get('set-cookie')!.split(';')[0];
      const html = await (await fetch(`${node.url}/admin/`, { headers: { cookie } })).text();
      const shown = (id: string) => Number(new RegExp(`id="${id}" data-msat="(-?\\d+)"`).exec(html)![1]);
      const ledger = await node.ledger();
      const charged = ledger.reduce((sum, row) => sum + Number(row.charged_msat), 0);
      const balances = (await Promise.all(keys.map((key) => node.balance(key)))).reduce((sum, b) => sum + b.balance, 0);
      expect(shown('total-held')).toBe(balances);
      expect(shown('total-held')).toBe(570_000 - charged);
      expect(shown('total-earned')).toBe(charged);
      expect(shown('total-earnings')).toBe(charged);
      expect(shown('total-reserved')).toBe(0);
      expect(html).toContain('id="total-requests">2 / 0<');
    } finally {
      await node.close();
    }
  });
});
