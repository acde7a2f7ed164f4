// The admin page's dashboard in Chromium (playwright-core): after billed requests, an operator
// logs in and sees charts with data, provider health, balances per mint, searches accounts, reads
// the logs of one request, saves a setting and adds a provider through the forms, and sees the
// changes in the audit log, with no error in the browser's console. Over HTTP: the provider-health
// route and the page's headers (strict CSP, the session's CSRF token handed to the script).
// QUARTET_ADMIN_SCREENSHOTS=1 also saves the screenshots of docs/proxy-operator.md.
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { browserTests, launchBrowser } from '../support/browser.js';
import { databaseKinds } from '../support/databases.js';
import { chatBody, postJson, startNode, type Node } from './forward-helpers.js';
import { openAccount } from './wallet-helpers.js';

const PASSWORD = 'correct horse battery staple';
const screenshots = process.env.QUARTET_ADMIN_SCREENSHOTS === '1';
const keyHash = (key: string) => createHash('sha256').update(key).digest('hex');

/** Signs in on the page and waits until every panel has drawn or said it cannot. */
async function signIn(page: Page, node: Node) {
  await page.goto(`${node.url}/admin/`);
  await page.fill('input[name=password]', PASSWORD);
  await page.click('#login-form button');
  await page.waitForSelector('body[data-dashboard=ready]', { timeout: 20_000 });
}

/** The browser's console errors and uncaught exceptions of a page. */
function consoleErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => errors.push(error.message));
  return errors;
}

const panelState = (page: Page, name: string) => page.getAttribute(`[data-panel="${name}"]`, 'data-state');

describe.each(databaseKinds)('admin dashboard on %s', (kind) => {
  let mint: DevMint;
  let node: Node;
  let browser: Browser;
  let keys: string[];
  const requestId = `dash-${kind}-request-1`;

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    node = await startNode(kind, {
      env: { SERVICES: 'proxy', PROXY_MINTS: mint.url, PROXY_ADMIN_PASSWORD: PASSWORD },
    });
    // Three users: one paid with ecash (proofs at the mint), two funded directly; billed requests
    // on two models, one of them named to try the page's escaping.
    keys = [
      await openAccount(node.url, await mint.mintToken(300)),
      await node.account(400_000),
      await node.account(90_000),
    ];
    for (const [i, key] of keys.entries()) {
      for (let n = 0; n <= i; n++) {
        const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody(), {
          authorization: `Bearer ${key}`,
          ...(i === 0 && n === 0 ? { 'x-request-id': requestId } : {}),
        });
        expect(answer.status).toBe(200);
      }
    }
    const hostile = '<img src=x onerror=alert(1)>';
    const account = await node.server.db.kysely
      .selectFrom('proxy_accounts')
      .select('id')
      .where('key_hash', '=', keyHash(keys[2]))
      .executeTakeFirstOrThrow();
    const now = Date.now();
    await node.server.db.kysely
      .insertInto('proxy_requests')
      .values({
        account_id: account.id,
        request_id: 'dash-hostile',
        path: '/v1/chat/completions',
        model: hostile,
        stream: 0,
        payment: 'key',
        status: 'settled',
        reserved_msat: 5000,
        charged_msat: 4000,
        cost_msat: 4000,
        prompt_tokens: 100,
        completion_tokens: 200,
        usage_source: 'upstream',
        upstream_status: 200,
        created_at: now - 1000,
        heartbeat_at: now,
        settled_at: now,
      })
      .execute();
    if (browserTests) browser = await launchBrowser();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await node?.close();
    await mint?.close();
  });

  it('answers the provider health: breakers and the last hour of billed requests', async () => {
    const login = await postJson(`${node.url}/admin/api/login`, { password: PASSWORD });
    const token = login.json.token as string;
    const answer = await fetch(`${node.url}/admin/api/provider-health`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(answer.status).toBe(200);
    const health = await answer.json();
    expect(health.providers).toEqual([
      expect.objectContaining({ breaker: 'closed', retry_at: null, base_url: node.upstream.url }),
    ]);
    const ledger = await node.ledger();
    expect(health.requests).toBe(ledger.length);
    expect(health.failed).toBe(ledger.filter((r) => r.status === 'released' || r.status === 'expired').length);
    expect(health.error_rate).toBe(health.failed / ledger.length);
    expect(health.latency_ms.p95).toBeGreaterThanOrEqual(health.latency_ms.p50);
    expect(health.latency_ms.max).toBeGreaterThanOrEqual(health.latency_ms.p95);
    expect((await fetch(`${node.url}/admin/api/provider-health`)).status).toBe(401);
  });

  it('serves the page with a strict CSP and its script, the CSRF token in a meta tag', async () => {
    const login = await fetch(`${node.url}/admin/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `password=${encodeURIComponent(PASSWORD)}`,
    });
    const cookie = login.headers.get('set-cookie')!.split(';')[0];
    const page = await fetch(`${node.url}/admin/`, { headers: { cookie } });
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<style>| style=/);
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(html)![1];
    const script = await fetch(`${node.url}/admin/assets/admin.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toContain('text/javascript');
    expect((await fetch(`${node.url}/admin/assets/admin.css`)).status).toBe(200);
    // The token in the tag is the one the operator API takes from this session; without it, refused.
    const tokens = (headers: Record<string, string>) =>
      fetch(`${node.url}/admin/api/cli-tokens`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ name: 'from the page' }),
      });
    expect((await tokens({})).status).toBe(403);
    expect((await tokens({ 'x-csrf-token': csrf })).status).toBe(200);
  });

  it('shows charts, health, balances, accounts and logs, and saves settings and providers', async ({ skip }) => {
    skip(!browserTests, 'no browser in the fast loop');
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
    const page = await context.newPage();
    const errors = consoleErrors(page);
    let dialogs = 0;
    page.on('dialog', (dialog) => {
      dialogs++;
      void dialog.dismiss();
    });
    await signIn(page, node);

    // Charts: canvases with what the ledger holds (requests, and sats earned).
    const ledger = await node.ledger();
    const chargedSats = ledger.reduce((sum, row) => sum + Number(row.charged_msat), 0) / 1000;
    expect(await panelState(page, 'usage')).toBe('ready');
    const usage = page.locator('#usage-panel .chart-time');
    await expect(usage.locator('canvas').count()).resolves.toBe(1);
    expect(Number(await usage.getAttribute('data-total'))).toBeCloseTo(ledger.length + chargedSats, 3);
    expect(await panelState(page, 'revenue')).toBe('ready');
    const revenue = page.locator('#revenue-panel .chart-bars');
    await expect(revenue.locator('canvas').count()).resolves.toBe(1);
    expect(Number(await revenue.getAttribute('data-points'))).toBe(2);
    expect(await page.textContent('#summary-panel [data-metric=total_requests] strong')).toBe(String(ledger.length));
    // The day view draws the same totals.
    await page.click('button[data-range=day]');
    await page.waitForFunction(() => document.querySelector('#usage-panel')?.getAttribute('data-state') === 'ready');
    expect(Number(await page.getAttribute('#usage-panel .chart-time', 'data-total'))).toBeCloseTo(
      ledger.length + chargedSats,
      3,
    );

    // Escaping: the hostile model name is shown as text, nothing of it runs.
    expect(await page.textContent('#revenue-panel')).toContain('<img src=x onerror=alert(1)>');
    expect(await page.locator('#revenue-panel img, #requests img').count()).toBe(0);

    // Provider health: the one provider's breaker is closed; the hour's requests are the ledger's.
    expect(await panelState(page, 'health')).toBe('ready');
    expect(await page.getAttribute('#health-panel [data-breaker]', 'data-breaker')).toBe('closed');
    expect(await page.textContent('#health-panel')).toContain(String(ledger.length));

    // Balances per mint: the proofs the ecash user paid with.
    expect(await panelState(page, 'balances')).toBe('ready');
    expect(await page.textContent('#balances-panel')).toContain(mint.url);

    // Accounts: all three, then the search finds one by its key's hash.
    expect(await panelState(page, 'accounts')).toBe('ready');
    await expect(page.locator('#accounts-panel tbody tr').count()).resolves.toBe(3);
    await page.fill('#accounts-panel input[name=search]', keyHash(keys[1]).slice(0, 16));
    await page.click('#accounts-panel button[type=submit]');
    await page.waitForFunction(() => document.querySelectorAll('#accounts-panel tbody tr').length === 1);
    expect(await page.getAttribute('#accounts-panel tbody tr code', 'title')).toBe(keyHash(keys[1]));

    // Logs: those of one request, found by its id.
    expect(await panelState(page, 'logs')).toBe('ready');
    await page.fill('#logs-panel input[name=request_id]', requestId);
    await page.click('#logs-panel button[type=submit]');
    await page.waitForFunction(
      (id) => {
        const rows = [...document.querySelectorAll('#logs-panel tbody tr')];
        return rows.length > 0 && rows.every((row) => row.textContent!.includes(id));
      },
      requestId,
      { timeout: 10_000 },
    );

    // Settings: the node's description, changed through the form, is what the API answers after.
    expect(await panelState(page, 'settings')).toBe('ready');
    const description = `Dashboard test node ${kind}`;
    await page.fill('#settings-form [name=description]', description);
    await page.click('#settings-form button[type=submit]');
    await page.waitForSelector('#settings-panel .status.ok');
    expect(await page.inputValue('#settings-form [name=description]')).toBe(description);

    // Providers: one added through the form is listed, and stored.
    expect(await panelState(page, 'providers')).toBe('ready');
    const rowsBefore = await page.locator('#providers-panel table.providers tbody tr').count();
    await page.click('#provider-add');
    await page.fill('#provider-form-new [name=base_url]', 'https://api.example.test/v1');
    await page.fill('#provider-form-new [name=api_key]', 'sk-dashboard-test');
    await page.click('#provider-form-new button[type=submit]');
    await page.waitForSelector('#providers-panel .status.ok');
    await expect(page.locator('#providers-panel table.providers tbody tr').count()).resolves.toBe(rowsBefore + 1);
    expect(await page.textContent('#providers-panel table.providers')).toContain('https://api.example.test/v1');
    expect(await page.textContent('#providers-panel table.providers')).not.toContain('sk-dashboard-test');

    // Both changes are in the audit log, by the password session.
    await page.click('#audit-panel button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#audit-panel')?.textContent?.includes('provider'));
    expect(await page.textContent('#audit-panel')).toMatch(/setting/);

    if (screenshots && kind === 'sqlite') await saveScreenshots(page);
    expect(dialogs).toBe(0);
    expect(errors).toEqual([]);
    await context.close();
  }, 120_000);
});

/** The screenshots of docs/proxy-operator.md ("The admin page"). */
async function saveScreenshots(page: Page) {
  mkdirSync('docs/images', { recursive: true });
  // The sticky navigation would cover the top of each section.
  await page.evaluate(() =>
    document.querySelector<HTMLElement>('nav#sections')!.style.setProperty('position', 'static'),
  );
  for (const id of ['overview', 'health', 'mints', 'accounts', 'logs', 'providers', 'settings']) {
    await page.locator(`section#${id}`).screenshot({ path: `docs/images/admin-dashboard-${id}.png` });
  }
}
