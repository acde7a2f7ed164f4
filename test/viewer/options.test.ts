// Every option of the viewer's table (docs/viewer.md#options) changes what the user sees or what is sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { launchBrowser } from '../support/browser.js';
import { DIST, expandOperation, openViewer, sendText, startStatic, type StaticServer } from './support.js';

let browser: Browser;
let site: StaticServer;
let page: Page;
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

const echo = (req: any, res: any) => {
  if (req.method === 'OPTIONS') {
    sendText(res, 204, '', 'text/plain', {
      'Access-Control-Allow-Methods': 'GET, POST, PUT, DELETE',
      'Access-Control-Allow-Headers': req.headers['access-control-request-headers'] ?? '',
    });
    return true;
  }
  if (req.url.startsWith('/v2/')) {
    sendText(res, 200, JSON.stringify({ url: req.url, apiKey: req.headers.api_key ?? null }), 'application/json');
    return true;
  }
  if (req.url.startsWith('/huge')) {
    const items = Array.from({ length: 60000 }, (_, i) => ({
      id: i,
      name: `item ${i}`,
      tags: ['a', 'b'],
      ok: i % 2 === 0,
      score: i / 7,
    }));
    sendText(res, 200, JSON.stringify(items), 'application/json');
    return true;
  }
  if (req.url.startsWith('/big')) {
    const items = Array.from({ length: 4000 }, (_, i) => ({ id: i, name: `item ${i}`, ok: true }));
    sendText(res, 200, JSON.stringify(items), 'application/json');
    return true;
  }
  if (req.url.startsWith('/validator')) {
    sendText(res, 200, PNG, 'image/png');
    return true;
  }
  return false;
};

beforeAll(async () => {
  site = await startStatic([echo]);
  // spec.test resolves to loopback: a description that is not "localhost" for the badge rule.
  browser = await launchBrowser(['--host-resolver-rules=MAP spec.test 127.0.0.1']);
  page = await browser.newPage();
});
afterAll(async () => {
  await browser?.close();
  await site?.close();
});

const PET = `'/fixtures/petstore-2.0.json'`;

describe('options', () => {
  it('spec: renders an inline description without url', async () => {
    const result = await openViewer(
      page,
      site.url,
      `{ spec: { openapi: '3.0.0', info: { title: 'Inline only', version: '1' }, ` +
        `paths: { '/ping': { get: { responses: { 200: { description: 'pong' } } } } } } }`,
    );
    expect(result.failure).toBeUndefined();
    await expect(page.locator('.qv-title').textContent()).resolves.toContain('Inline only');
    await expect(page.locator('.qv-tag-toggle').textContent()).resolves.toBe('default');
  });

  it('dom_id: renders into the named element', async () => {
    await page.goto(`${site.url}/harness.html`);
    await page.evaluate(`document.body.insertAdjacentHTML('beforeend', '<section id="elsewhere"></section>')`);
    await page.evaluate(
      `new Promise((resolve) => { new SwaggerUi({ url: ${PET}, dom_id: 'elsewhere', onComplete: resolve }).load(); })`,
    );
    await expect(page.locator('#elsewhere .qv-title').textContent()).resolves.toContain('Petstore Two');
    await expect(page.locator('#swagger_ui .qv').count()).resolves.toBe(0);
  });

  it('docExpansion: none, list and full', async () => {
    await openViewer(page, site.url, `{ url: ${PET} }`);
    await expect(page.locator('.qv-op-head').count()).resolves.toBe(0); // built lazily, on expand
    await openViewer(page, site.url, `{ url: ${PET}, docExpansion: 'list' }`);
    await expect(page.locator('.qv-op-head:visible').count()).resolves.toBe(10);
    await expect(page.locator('.qv-op-body:visible').count()).resolves.toBe(0);
    await openViewer(page, site.url, `{ url: ${PET}, docExpansion: 'full' }`);
    await page.waitForFunction(() => document.querySelectorAll('.qv-op-body:not([hidden])').length === 10);
  });

  it('apisSorter and operationsSorter: alpha, method, and compare functions', async () => {
    await openViewer(
      page,
      site.url,
      `{ url: ${PET}, apisSorter: (a, b) => b.name.localeCompare(a.name), ` +
        `operationsSorter: 'alpha', docExpansion: 'list' }`,
    );
    expect(await page.locator('.qv-tag-toggle').allTextContents()).toEqual(['user', 'store', 'pet']);
    const paths = await page.locator('#resource_pet .qv-path').allTextContents();
    expect(paths).toEqual([...paths].sort((a, b) => a.localeCompare(b)));
    await openViewer(
      page,
      site.url,
      `{ url: ${PET}, apisSorter: 'alpha', operationsSorter: 'method', docExpansion: 'list' }`,
    );
    const methods = await page.locator('#resource_pet .qv-method').allTextContents();
    expect(methods).toEqual(['DELETE', 'GET', 'GET', 'GET', 'POST', 'POST']);
    await openViewer(
      page,
      site.url,
      `{ url: ${PET}, operationsSorter: (a, b) => b.path.length - a.path.length, docExpansion: 'list' }`,
    );
    await expect(page.locator('#resource_pet .qv-path').first().textContent()).resolves.toBe(
      '/pet/{petId}/uploadImage',
    );
  });

  it('defaultModelRendering: schema (default) or model picks the open tab', async () => {
    await openViewer(page, site.url, `{ url: ${PET} }`);
    let op = await expandOperation(page, 'store', 'post', '/store/order');
    await expect(op.locator('.qv-tab[aria-selected=true]').first().textContent()).resolves.toBe('Model Schema');
    await openViewer(page, site.url, `{ url: ${PET}, defaultModelRendering: 'model' }`);
    op = await expandOperation(page, 'store', 'post', '/store/order');
    await expect(op.locator('.qv-tab[aria-selected=true]').first().textContent()).resolves.toBe('Model');
    await expect(op.locator('.qv-model').first().textContent()).resolves.toContain('Order {');
  });

  it('onComplete receives the api and the ui', async () => {
    await openViewer(
      page,
      site.url,
      `{ url: ${PET}, ` +
        `onComplete: (api, ui) => { window.seen = [api.info.title, ui === window.ui || ui instanceof SwaggerUi] } }`,
    );
    expect(await page.evaluate('window.seen')).toEqual(['Petstore Two', true]);
  });

  it('booleanValues: the two choices are shown and sent', async () => {
    await openViewer(page, site.url, `{ url: ${PET}, booleanValues: ['yes', 'no'] }`);
    const op = await expandOperation(page, 'pet', 'get', '/pet/findByStatus');
    const select = op.locator('select[name=includeArchived]');
    expect(await select.locator('option').allTextContents()).toEqual(['', 'yes', 'no']);
    await op.locator('select[name=status]').selectOption(['available', 'sold']);
    await select.selectOption('yes');
    await op.locator('.qv-submit').click();
    await expect(op.locator('.qv-request-url').textContent()).resolves.toBe(
      `${site.url}/v2/pet/findByStatus?status=available&status=sold&includeArchived=yes&limit=20`,
    );
    await expect(op.locator('.qv-response-code').textContent()).resolves.toBe('200');
  });

  it('supportedSubmitMethods: only listed methods get "Try it out!"; empty disables all', async () => {
    await openViewer(page, site.url, `{ url: ${PET}, supportedSubmitMethods: ['get'] }`);
    let post = await expandOperation(page, 'pet', 'post', '/pet');
    await expect(post.locator('.qv-submit').count()).resolves.toBe(0);
    await expect(post.locator('.qv-params').count()).resolves.toBe(1); // parameters still shown
    const get = await expandOperation(page, 'pet', 'get', '/pet/{petId}');
    await expect(get.locator('.qv-submit').count()).resolves.toBe(1);
    await openViewer(page, site.url, `{ url: ${PET}, supportedSubmitMethods: [] }`);
    post = await expandOperation(page, 'pet', 'get', '/pet/{petId}');
    await expect(post.locator('.qv-submit').count()).resolves.toBe(0);
  });

  it('showRequestHeaders and authorizations (applied to the description fetch and to try-it)', async () => {
    const before = site.seen.length;
    await openViewer(
      page,
      site.url,
      `{ url: ${PET}, showRequestHeaders: true, ` +
        `authorizations: { api_key: new SwaggerClient.ApiKeyAuthorization('api_key', 'secret-1', 'header') } }`,
    );
    expect(site.seen.slice(before).find((r) => r.url.includes('petstore-2.0.json'))?.headers.api_key).toBe('secret-1');
    const op = await expandOperation(page, 'pet', 'get', '/pet/{petId}');
    await op.locator('input[name=petId]').fill('7');
    await op.locator('.qv-submit').click();
    await expect(op.locator('.qv-request-headers').textContent()).resolves.toContain('api_key: secret-1');
    await expect(op.locator('.qv-response-text').textContent()).resolves.toContain('"apiKey": "secret-1"');
    // Without showRequestHeaders there is no request headers block.
    await openViewer(page, site.url, `{ url: ${PET} }`);
    const plain = await expandOperation(page, 'pet', 'get', '/pet/{petId}');
    await plain.locator('input[name=petId]').fill('7');
    await plain.locator('.qv-submit').click();
    await plain.locator('.qv-response-code').waitFor();
    await expect(plain.locator('.qv-request-headers').count()).resolves.toBe(0);
  });

  it('highlightSizeThreshold: large responses stay plain text; absent highlights all', async () => {
    const spec =
      `{ openapi: '3.0.0', info: { title: 'Big', version: '1' }, servers: [{ url: '${site.url}' }], ` +
      `paths: { '/big': { get: { responses: { 200: { description: 'ok' } } } } } }`;
    await openViewer(page, site.url, `{ spec: ${spec}, highlightSizeThreshold: 1000 }`);
    let op = await expandOperation(page, 'default', 'get', '/big');
    await op.locator('.qv-submit').click();
    await op.locator('.qv-response-code').waitFor();
    await expect(op.locator('.qv-response-text span').count()).resolves.toBe(0);
    await openViewer(page, site.url, `{ spec: ${spec} }`);
    op = await expandOperation(page, 'default', 'get', '/big');
    await op.locator('.qv-submit').click();
    await op.locator('.qv-response-code').waitFor();
    await page.waitForFunction(() => document.querySelectorAll('.qv-response-text .hl-number').length >= 4000);
  });

  it('highlights a multi-megabyte (pretty-printed) response in slices, keeping the page responsive', async () => {
    const spec =
      `{ openapi: '3.0.0', info: { title: 'Huge', version: '1' }, servers: [{ url: '${site.url}' }], ` +
      `paths: { '/huge': { get: { responses: { 200: { description: 'ok' } } } } } }`;
    await openViewer(page, site.url, `{ spec: ${spec} }`);
    const op = await expandOperation(page, 'default', 'get', '/huge');
    await op.locator('.qv-submit').click();
    await op.locator('.qv-response-code').waitFor();
    // The whole body is on screen before it is coloured: the highlighter yields between slices.
    const early = await page.evaluate(() => {
      const blocks = document.querySelectorAll('.qv-response-text .hl-block');
      // (the very last block holds only the closing bracket, which has no token to colour)
      return {
        text: document.querySelector('.qv-response-text')!.textContent!.length,
        lastColoured: blocks[blocks.length - 2].childElementCount > 0,
      };
    });
    expect(early.text).toBeGreaterThan(4_000_000);
    expect(early.lastColoured).toBe(false);
    // …and the page answers while it colours: a timer set now runs before the colouring ends
    // (a highlighter that held the main thread would run it only afterwards).
    const answeredWhileColouring = await page.evaluate(
      () =>
        new Promise<boolean>((resolve) => {
          setTimeout(() => {
            const blocks = document.querySelectorAll('.qv-response-text .hl-block');
            resolve(blocks[blocks.length - 2].childElementCount === 0);
          }, 0);
        }),
    );
    expect(answeredWhileColouring).toBe(true);
    await page.waitForFunction(
      () => {
        const blocks = document.querySelectorAll('.qv-response-text .hl-block');
        return blocks[blocks.length - 2].childElementCount > 0;
      },
      undefined,
      { timeout: 180_000, polling: 500 },
    );
    await expect(
      op.locator('.qv-response-text .hl-block').nth(-2).locator('.hl-number').count(),
    ).resolves.toBeGreaterThan(0);
  }, 240_000);

  it('jsonEditor: a form built from the body schema writes the JSON body', async () => {
    await openViewer(page, site.url, `{ url: ${PET}, jsonEditor: true }`);
    const op = await expandOperation(page, 'store', 'post', '/store/order');
    const editor = op.locator('.qv-json-editor');
    await expect(editor.count()).resolves.toBe(1);
    await editor.getByLabel('quantity', { exact: true }).fill('3');
    await editor.getByLabel('status', { exact: true }).selectOption('approved');
    const body = JSON.parse(await op.locator('textarea.qv-body-input').inputValue());
    expect(body).toMatchObject({ quantity: 3, status: 'approved' });
    await openViewer(page, site.url, `{ url: ${PET} }`);
    const plain = await expandOperation(page, 'store', 'post', '/store/order');
    await expect(plain.locator('.qv-json-editor').count()).resolves.toBe(0);
  });

  it('validatorUrl: badge for non-local descriptions, local ones when set, none for null; offline panel', async () => {
    const port = new URL(site.url).port;
    const specUrl = `http://spec.test:${port}/fixtures/petstore-2.0.json`;
    await page.goto(`http://spec.test:${port}/harness.html`);
    await page.evaluate(
      `new Promise((resolve) => { window.ui = new SwaggerUi({ url: '${specUrl}', validatorUrl: 'http://spec.test:${port}/validator', onComplete: resolve }).load(); })`,
    );
    const badge = page.locator('.qv-validator-badge');
    await expect(badge.getAttribute('href')).resolves.toBe(
      `http://spec.test:${port}/validator/debug?url=${encodeURIComponent(specUrl)}`,
    );
    await expect(badge.locator('img').getAttribute('src')).resolves.toBe(
      `http://spec.test:${port}/validator?url=${encodeURIComponent(specUrl)}`,
    );
    await page.evaluate(
      `new Promise((resolve) => { ` +
        `new SwaggerUi({ url: '${specUrl}', validatorUrl: null, onComplete: resolve }).load(); })`,
    );
    await expect(page.locator('.qv-validator-badge').count()).resolves.toBe(0);
    // 127.0.0.1 is local: no badge unless the page set validatorUrl itself (2.2.10's rule).
    await openViewer(page, site.url, `{ url: ${PET}, validatorUrl: 'http://spec.test:${port}/validator' }`);
    await expect(page.locator('.qv-validator-badge').count()).resolves.toBe(1);
    await openViewer(page, site.url, `{ url: ${PET} }`);
    await expect(page.locator('.qv-validator-badge').count()).resolves.toBe(0);
    await page.locator('.qv-validation summary').click();
    await page.waitForFunction(() =>
      /Validation: 0 errors/.test(document.querySelector('.qv-validation summary')?.textContent ?? ''),
    );
    // A broken description is flagged offline.
    await openViewer(
      page,
      site.url,
      `{ spec: { swagger: '2.0', info: { title: 'Broken' }, paths: { 'items/{id}': { get: { responses: ` +
        `{ 200: { description: 'x', schema: { $ref: '#/definitions/Nope' } } } } } } } }`,
    );
    await page.locator('.qv-validation summary').click();
    await page.waitForFunction(() =>
      /Validation: [1-9]/.test(document.querySelector('.qv-validation summary')?.textContent ?? ''),
    );
    const text = await page.locator('.qv-validation').textContent();
    expect(text).toContain('info.version');
    expect(text).toContain('path must start with /');
    expect(text).toContain('path parameter not declared: id');
    expect(text).toContain('#/definitions/Nope');
  });

  it('oauth2RedirectUrl: shown as the redirect address in the Authorize panel', async () => {
    await openViewer(page, site.url, `{ url: ${PET}, oauth2RedirectUrl: 'http://127.0.0.1:9/custom-o2c.html' }`);
    await page.locator('.qv-authorize').click();
    await expect(page.locator('.qv-auth-panel').textContent()).resolves.toContain('http://127.0.0.1:9/custom-o2c.html');
  });

  it('reads ?url= and loads another description from the address box', async () => {
    await page.goto(`${site.url}/viewer/index.html?url=${encodeURIComponent('/fixtures/openapi-3.1.json')}`);
    await page.locator('.qv-title', { hasText: 'Library Three One' }).waitFor();
    await page.locator('#qv-url').fill('/fixtures/petstore-2.0.json');
    await page.locator('#qv-url').press('Enter');
    await page.locator('.qv-title', { hasText: 'Petstore Two' }).waitFor();
    expect(new URL(page.url()).searchParams.get('url')).toBe('/fixtures/petstore-2.0.json');
  });

  it('works opened from disk (file://) with a remote description and a language file', async () => {
    const index = pathToFileURL(join(DIST, 'index.html'));
    index.searchParams.set('url', `${site.url}/fixtures/petstore-2.0.json`);
    index.searchParams.set('lang', 'es');
    await page.goto(index.href);
    await page.locator('.qv-title', { hasText: 'Petstore Two' }).waitFor();
    const op = await expandOperation(page, 'pet', 'get', '/pet/{petId}');
    await expect(op.locator('.qv-submit').textContent()).resolves.toBe('¡Pruébalo!');
    await op.locator('input[name=petId]').fill('3');
    await op.locator('.qv-submit').click();
    await expect(op.locator('.qv-response-code').textContent()).resolves.toBe('200');
  });
});
