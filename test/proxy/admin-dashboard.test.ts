// The admin page's dashboard in Chromium (playwright-core), against a real node: after billed
// requests, an operator signs in and sees charts with the ledger's totals, revenue by model,
// provider health, balances per mint, the accounts (and searches them), the logs of one request,
// the transactions and a Lightning invoice; then saves a setting and adds, edits and deletes a
// provider and a model through the forms, each change read back from the API and shown in the audit
// log, with no error in the browser's console. Over HTTP: the provider-health route and the page's
// headers (strict CSP, the session's CSRF token handed to the script).
// QUARTET_ADMIN_SCREENSHOTS=1 also saves the screenshots of docs/proxy-operator.md (SQLite run).
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { startFakeUpstream, type FakeUpstream } from '../../src/fakeupstream/index.js';
import { browserTests, launchBrowser } from '../support/browser.js';
import { databaseKinds } from '../support/databases.js';
import { chatBody, postJson } from './forward-helpers.js';
import { OPERATOR_PASSWORD, startOperatorNode, type OperatorNode } from './operator-helpers.js';
import { openAccount } from './wallet-helpers.js';

const screenshots = process.env.QUARTET_ADMIN_SCREENSHOTS === '1';
const SECOND_KEY = 'sk-dashboard-second';
/** What each user paid in, sats. */
const DEPOSITS = [300, 400, 90];
const keyHash = (key: string) => createHash('sha256').update(key).digest('hex');

/** Signs in on the page and waits until every panel has drawn or said it cannot. */
async function signIn(page: Page, node: OperatorNode) {
  await page.goto(`${node.url}/admin/`);
  await page.fill('input[name=password]', OPERATOR_PASSWORD);
  await page.click('#login-form button');
  await page.waitForSelector('body[data-dashboard=ready]', { timeout: 20_000 });
}

/** The browser's console errors, uncaught exceptions and failed requests of a page. */
function consoleErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('requestfailed', (request) => errors.push(`${request.url()}: ${request.failure()?.errorText}`));
  return errors;
}

const panelState = (page: Page, name: string) => page.getAttribute(`[data-panel="${name}"]`, 'data-state');

/** The text of each cell of each row of the tables in `selector`. */
const cellsOf = (page: Page, selector: string) =>
  page.$$eval(`${selector} tbody tr`, (rows) =>
    rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent ?? '')),
  );

/** Waits for a panel's latest load to end, and says how it ended. */
async function loaded(page: Page, name: string) {
  await page.waitForSelector(`[data-panel="${name}"]:not([data-state=loading])`);
  return panelState(page, name);
}

/** Waits for the outcome line of a change in a panel. */
const outcome = (page: Page, panel: string, text: string) =>
  page.locator(`#${panel}-panel .status.ok`, { hasText: text }).waitFor();

/** One of the screenshots of docs/proxy-operator.md ("The admin page"), when asked for. */
async function screenshot(page: Page, kind: string, section: string) {
  if (!screenshots || kind !== 'sqlite') return;
  mkdirSync('docs/images', { recursive: true });
  // The sticky navigation would cover the top of each section.
  await page.evaluate(() =>
    document.querySelector<HTMLElement>('nav#sections')!.style.setProperty('position', 'static'),
  );
  await page.locator(`section#${section}`).screenshot({ path: `docs/images/admin-dashboard-${section}.png` });
}

describe.each(databaseKinds)('admin dashboard on %s', (kind) => {
  let mint: DevMint;
  let second: FakeUpstream;
  let node: OperatorNode;
  let browser: Browser;
  let keys: string[];
  let logDir: string;
  let invoiceHash: string;
  const requestId = `dash-${kind}-request-1`;
  const hostile = '<img src=x onerror=alert(1)>';

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    second = await startFakeUpstream({ apiKey: SECOND_KEY });
    logDir = mkdtempSync(join(tmpdir(), 'quartet-dashboard-logs-'));
    node = await startOperatorNode(kind, { env: { PROXY_MINTS: mint.url, LOG_LEVEL: 'info', LOG_DIR: logDir } });
    // Three users who paid with ecash (the node holds the proofs at the mint); billed requests on
    // two models, one of them named to try the page's escaping.
    keys = [];
    for (const sats of DEPOSITS) keys.push(await openAccount(node.url, await mint.mintToken(sats)));
    for (const [i, key] of keys.entries()) {
      for (let n = 0; n <= i; n++) {
        const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody(), {
          authorization: `Bearer ${key}`,
          ...(i === 0 && n === 0 ? { 'x-request-id': requestId } : {}),
        });
        expect(answer.status).toBe(200);
      }
    }
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
    // A Lightning invoice a user asked for and has not paid (it funds no account yet).
    const invoice = await postJson(`${node.url}/v1/balance/lightning/invoice`, { amount_sats: 500, purpose: 'create' });
    expect(invoice.status).toBe(200);
    invoiceHash = invoice.json.payment_hash;
    if (browserTests) browser = await launchBrowser();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await node?.close();
    await second?.close();
    await mint?.close();
    if (logDir) rmSync(logDir, { recursive: true, force: true });
  });

  it('answers the provider health: breakers and the last hour of billed requests', async () => {
    const answer = await node.api('GET', '/admin/api/provider-health');
    expect(answer.status).toBe(200);
    const health = answer.json;
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
      body: `password=${encodeURIComponent(OPERATOR_PASSWORD)}`,
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

  it('shows charts with the ledger, health, balances, accounts, logs, transactions and invoices', async ({ skip }) => {
    skip(!browserTests, 'no browser in the fast loop');
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
    const page = await context.newPage();
    const errors = consoleErrors(page);
    await signIn(page, node);
    // Every panel drew from its endpoint: none says it is unavailable.
    const states = await page.$$eval('[data-panel]', (panels) =>
      panels.map((panel) => `${panel.getAttribute('data-panel')}: ${panel.getAttribute('data-state')}`),
    );
    expect(states.length).toBe(12);
    expect(states.filter((state) => !state.endsWith(': ready'))).toEqual([]);
    for (const section of ['overview', 'health', 'mints', 'accounts', 'transactions']) {
      await screenshot(page, kind, section);
    }

    // Charts: canvases with what the ledger holds (requests, and sats earned).
    const ledger = await node.ledger();
    const chargedSats = ledger.reduce((sum, row) => sum + Number(row.charged_msat), 0) / 1000;
    const usage = page.locator('#usage-panel .chart-time');
    await expect(usage.locator('canvas').count()).resolves.toBe(1);
    expect(Number(await usage.getAttribute('data-total'))).toBeCloseTo(ledger.length + chargedSats, 3);
    expect(await page.textContent('#summary-panel [data-metric=total_requests] strong')).toBe(String(ledger.length));
    // The day view draws the same totals.
    await page.click('button[data-range=day]');
    expect(await loaded(page, 'usage')).toBe('ready');
    expect(await page.getAttribute('button[data-range=day]', 'aria-pressed')).toBe('true');
    expect(Number(await page.getAttribute('#usage-panel .chart-time', 'data-total'))).toBeCloseTo(
      ledger.length + chargedSats,
      3,
    );

    // Revenue by model: a bar per model, the bars adding up to what the ledger charged, and each
    // model's row counting its requests. The hostile name is shown as text, nothing of it runs.
    expect(await loaded(page, 'revenue')).toBe('ready');
    const revenue = page.locator('#revenue-panel .chart-bars');
    await expect(revenue.locator('canvas').count()).resolves.toBe(1);
    const byModel = new Map<string, number>();
    for (const row of ledger) byModel.set(row.model, (byModel.get(row.model) ?? 0) + 1);
    expect(byModel.size).toBe(2);
    expect(Number(await revenue.getAttribute('data-points'))).toBe(byModel.size);
    expect(Number(await revenue.getAttribute('data-total'))).toBeCloseTo(chargedSats, 3);
    const revenueRows = await cellsOf(page, '#revenue-panel');
    expect(new Map(revenueRows.map((cells) => [cells[0], Number(cells[1])]))).toEqual(byModel);
    expect(await page.textContent('#revenue-panel')).toContain(hostile);
    expect(await page.locator('#revenue-panel img, #requests img').count()).toBe(0);

    // Provider health: the one provider's breaker is closed; the hour's requests are the ledger's.
    expect(await page.getAttribute('#health-panel [data-breaker]', 'data-breaker')).toBe('closed');
    expect(await page.textContent('#health-panel')).toContain(node.upstream.url);
    expect(await page.textContent('#health-panel .card strong')).toBe(String(ledger.length));

    // Balances per mint: the wallet holds what the users paid in, owed to them or the operator's.
    const deposited = DEPOSITS.reduce((a, b) => a + b, 0);
    const balances = await cellsOf(page, '#balances-panel');
    expect(balances).toEqual([[mint.url, 'sat', `${deposited} sat`, expect.any(String), expect.any(String), '–']]);
    const [users, operator] = balances[0].slice(3, 5).map((cell) => Number(cell.replace(/ sat$/, '')));
    let owed = 0;
    for (const key of keys) owed += (await node.balance(key)).balance;
    expect(users).toBe(Math.ceil(owed / 1000));
    expect(users + operator).toBe(deposited);

    // Accounts: all three, then the search finds one by its key's hash.
    await expect(page.locator('#accounts-panel tbody tr').count()).resolves.toBe(3);
    await page.fill('#accounts-panel input[name=search]', keyHash(keys[1]).slice(0, 16));
    await page.click('#accounts-panel button[type=submit]');
    await page.waitForFunction(() => document.querySelectorAll('#accounts-panel tbody tr').length === 1);
    expect(await loaded(page, 'accounts')).toBe('ready');
    expect(await page.getAttribute('#accounts-panel tbody tr code', 'title')).toBe(keyHash(keys[1]));

    // Logs: those of one request, found by its id (its access line among them).
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
    expect(await loaded(page, 'logs')).toBe('ready');
    expect(await page.textContent('#logs-panel tbody')).toContain('/v1/chat/completions');

    // Transactions: the ecash that opened each account, in, newest first; the invoice, not yet paid.
    const transactions = await cellsOf(page, '#transactions-panel');
    expect(transactions.map((cells) => cells.slice(1, 4))).toEqual(
      DEPOSITS.map((sats) => ['in', `${sats} sat`, mint.url]).reverse(),
    );
    expect(await page.getAttribute('#invoices-panel tbody tr code', 'title')).toBe(invoiceHash);
    expect(await page.textContent('#invoices-panel tbody tr')).toContain('500 sat');
    expect(await page.textContent('#invoices-panel tbody tr')).toContain('pending');

    await screenshot(page, kind, 'logs');
    expect(errors).toEqual([]);
    await context.close();
  }, 120_000);

  it('saves a setting, adds, edits and deletes a provider and a model, and shows it all in the audit log', async ({
    skip,
  }) => {
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

    // Settings: the node's description, changed through the form, is what the API answers after.
    const description = `Dashboard test node ${kind}`;
    await page.fill('#settings-form [name=description]', description);
    await page.click('#settings-form button[type=submit]');
    await outcome(page, 'settings', 'Saved 1 setting: description.');
    expect(await page.inputValue('#settings-form [name=description]')).toBe(description);
    expect((await node.api('GET', '/admin/api/settings')).json.description).toBe(description);
    await screenshot(page, kind, 'settings');

    // A provider added through the form: listed without its key, and stored.
    const providerRows = page.locator('#providers-panel table.providers tbody tr');
    const rowsBefore = await providerRows.count();
    await page.click('#provider-add');
    await page.fill('#provider-form-new [name=base_url]', `${second.url}/v1`);
    await page.fill('#provider-form-new [name=api_key]', SECOND_KEY);
    await page.click('#provider-form-new button[type=submit]');
    await outcome(page, 'providers', 'Provider added.');
    // The list is read again after the outcome shows: wait for it.
    await expect.poll(() => providerRows.count()).toBe(rowsBefore + 1);
    expect(await page.textContent('#providers-panel table.providers')).toContain(`${second.url}/v1`);
    expect(await page.textContent('#providers-panel')).not.toContain(SECOND_KEY);
    const stored = ((await node.api('GET', '/admin/api/upstream-providers')).json as any[]).find(
      (p) => p.base_url === `${second.url}/v1`,
    );
    expect(stored).toMatchObject({ enabled: true, api_key: '[REDACTED]' });
    const id = String(stored.id);

    // Edited: its fee factor, the key left empty (unchanged).
    await page.click(`#providers-panel button[data-edit="${id}"]`);
    await page.fill(`#provider-form-${id} [name=provider_fee]`, '1.25');
    await page.click(`#provider-form-${id} button[type=submit]`);
    await outcome(page, 'providers', `Provider ${id} saved.`);
    expect((await node.api('GET', `/admin/api/upstream-providers/${id}`)).json).toMatchObject({
      provider_fee: 1.25,
      base_url: `${second.url}/v1`,
    });

    // A model of it, added, then its price edited, each read back from the API.
    const modelsOf = async () =>
      (await node.api('GET', `/admin/api/upstream-providers/${id}/models`)).json.db_models as any[];
    const modelForm = `#model-form-${id}`;
    await page.click(`#providers-panel button[data-models="${id}"]`);
    await page.waitForSelector(`#models-${id}[data-state=ready]`);
    await page.fill(`${modelForm} [name=id]`, 'dash/model-1');
    await page.fill(`${modelForm} [name=prompt]`, '0.000002');
    await page.fill(`${modelForm} [name=completion]`, '0.000004');
    await page.click(`${modelForm} button[type=submit]`);
    await outcome(page, 'providers', 'Model dash/model-1 saved.');
    await page.waitForSelector(`#models-${id}[data-state=ready] button[data-edit-model="dash/model-1"]`);
    expect(await modelsOf()).toEqual([
      expect.objectContaining({ id: 'dash/model-1', pricing: expect.objectContaining({ prompt: 0.000002 }) }),
    ]);
    await screenshot(page, kind, 'providers');
    await page.click(`#models-${id} button[data-edit-model="dash/model-1"]`);
    expect(await page.inputValue(`${modelForm} [name=completion]`)).toBe('0.000004');
    await page.fill(`${modelForm} [name=prompt]`, '0.000003');
    await page.click(`${modelForm} button[type=submit]`);
    await page.locator(`#models-${id}[data-state=ready] tbody td`, { hasText: '0.000003' }).waitFor();
    expect(await modelsOf()).toEqual([
      expect.objectContaining({
        id: 'dash/model-1',
        pricing: expect.objectContaining({ prompt: 0.000003, completion: 0.000004 }),
      }),
    ]);

    // Deleted, asked once more in place: the model, then the provider.
    await page.click(`#models-${id} tbody tr .confirm button`);
    await page.click(`#models-${id} tbody tr .confirm button:has-text("Yes, delete")`);
    await outcome(page, 'providers', 'Model dash/model-1 deleted.');
    expect(await modelsOf()).toEqual([]);
    const row = page.locator('#providers-panel table.providers tbody tr', { hasText: `${second.url}/v1` });
    await row.locator('.confirm button').click();
    await row.locator('.confirm button', { hasText: 'Yes, delete' }).click();
    await outcome(page, 'providers', `Provider ${id} deleted.`);
    await expect.poll(() => providerRows.count()).toBe(rowsBefore);
    expect((await node.api('GET', `/admin/api/upstream-providers/${id}`)).status).toBe(404);

    // Every change is in the audit log, by the password session, newest first.
    await page.click('#audit-panel button[type=submit]');
    await page.locator('#audit-panel code', { hasText: 'provider.delete' }).waitFor();
    expect(await loaded(page, 'audit')).toBe('ready');
    const audit = (await cellsOf(page, '#audit-panel')).map((cells) => cells.slice(1, 4));
    const target = `provider:${id}`;
    expect(audit.slice(0, 7)).toEqual([
      ['password', 'provider.delete', target],
      ['password', 'model.delete', `${target}/model:dash/model-1`],
      ['password', 'model.update', `${target}/model:dash/model-1`],
      ['password', 'model.create', `${target}/model:dash/model-1`],
      ['password', 'provider.update', target],
      ['password', 'provider.create', target],
      ['password', 'settings.update', expect.any(String)],
    ]);
    await screenshot(page, kind, 'audit');

    expect(dialogs).toBe(0);
    expect(errors).toEqual([]);
    await context.close();
  }, 120_000);
});
