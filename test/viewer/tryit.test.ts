// Try-it against a running quartet (cross-origin, through its CORS headers) with an api key and
// with a bearer token; query api keys URL-encoded; the message when CORS headers are missing;
// images and downloads in responses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../support/server.js';
import {
  expandOperation,
  launchBrowser,
  openApiSpec,
  openViewer,
  sendText,
  startStatic,
  type StaticServer,
} from './support.js';

let browser: Browser;
let site: StaticServer;
let bare: StaticServer;
let quartet: TestServer;
let page: Page;
const received: Record<string, string | string[] | undefined>[] = [];
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

beforeAll(async () => {
  [browser, site, bare, quartet] = await Promise.all([
    launchBrowser(),
    startStatic([
      (req, res) => {
        if (req.url === '/files/pixel.png') return (sendText(res, 200, PNG, 'image/png'), true);
        if (req.url === '/files/report.bin') {
          return (
            sendText(res, 200, Buffer.from([0, 1, 2, 3]), 'application/octet-stream', {
              'Content-Disposition': 'attachment; filename="report.bin"',
              'Access-Control-Expose-Headers': 'Content-Disposition',
            }),
            true
          );
        }
        if (req.url === '/files/page.html') {
          return (sendText(res, 200, '<b>bold</b><script>window.pwned=1</script>', 'text/html'), true);
        }
        if (req.url?.startsWith('/files/echo')) {
          return (sendText(res, 200, JSON.stringify({ url: req.url }), 'application/json'), true);
        }
        return false;
      },
    ]),
    // A server that answers but sends no cross-origin headers at all.
    startStatic(
      [
        (req, res) => {
          sendText(res, 200, '{"hidden":true}', 'application/json');
          return true;
        },
      ],
      { cors: false },
    ),
    startTestServer('sqlite'),
  ]);
  quartet.app.server.on('request', (req) => received.push({ url: req.url, ...req.headers }));
  page = await browser.newPage();
});
afterAll(async () => {
  await browser?.close();
  await Promise.all([site?.close(), bare?.close(), quartet?.close()]);
});

/** A description of quartet's platform routes, protected the two ways under test. */
function quartetSpec() {
  return JSON.stringify({
    openapi: '3.1.0',
    info: { title: 'quartet platform', version: '0.0.1' },
    servers: [{ url: quartet.url }],
    paths: {
      '/healthz': {
        get: {
          tags: ['platform'],
          operationId: 'health',
          security: [{ key: [] }],
          responses: { 200: { description: 'ok' } },
        },
      },
      '/readyz': {
        get: {
          tags: ['platform'],
          operationId: 'ready',
          security: [{ token: [] }],
          responses: { 200: { description: 'ready' } },
        },
      },
    },
    components: {
      securitySchemes: {
        key: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        token: { type: 'http', scheme: 'bearer' },
      },
    },
  });
}

describe('try it out', () => {
  it('calls a running quartet with an api key from the Authorize panel', async () => {
    await openViewer(page, site.url, `{ spec: ${quartetSpec()}, showRequestHeaders: true }`);
    await page.locator('.qv-authorize').click();
    const form = page.locator('form.qv-auth-scheme[aria-label=key]');
    await form.getByLabel('Value').fill('k-123');
    await form.getByRole('button', { name: 'Authorize' }).click();
    await expect(form.locator('.qv-auth-status').textContent()).resolves.toBe('Authorized');
    const op = await expandOperation(page, 'platform', 'get', '/healthz');
    await op.locator('.qv-submit').click();
    await expect(op.locator('.qv-response-code').textContent()).resolves.toBe('200');
    await expect(op.locator('.qv-response-text').textContent()).resolves.toContain('"status": "ok"');
    await expect(op.locator('.qv-curl').textContent()).resolves.toBe(
      `curl -X GET --header 'X-API-Key: k-123' '${quartet.url}/healthz'`,
    );
    expect(received.filter((r) => r.url === '/healthz').at(-1)?.['x-api-key']).toBe('k-123');
    await expect(op.locator('.qv-response-headers').textContent()).resolves.toContain('content-type: application/json');
  });

  it('calls a running quartet with a bearer token, only on operations that ask for it', async () => {
    await openViewer(page, site.url, `{ spec: ${quartetSpec()} }`);
    await page.locator('.qv-authorize').click();
    const form = page.locator('form.qv-auth-scheme[aria-label=token]');
    await form.getByLabel('Token').fill('tok-9');
    await form.getByRole('button', { name: 'Authorize' }).click();
    const ready = await expandOperation(page, 'platform', 'get', '/readyz');
    await ready.locator('.qv-submit').click();
    await expect(ready.locator('.qv-response-code').textContent()).resolves.toBe('200');
    expect(received.filter((r) => r.url === '/readyz').at(-1)?.authorization).toBe('Bearer tok-9');
    const health = await expandOperation(page, 'platform', 'get', '/healthz');
    await health.locator('.qv-submit').click();
    await health.locator('.qv-response-code').waitFor();
    expect(received.filter((r) => r.url === '/healthz').at(-1)?.authorization).toBeUndefined();
  });

  it('2.x style: ui.api.clientAuthorizations.add with a query api key, URL-encoded', async () => {
    const spec = JSON.stringify({
      swagger: '2.0',
      info: { title: 'q', version: '1' },
      host: new URL(site.url).host,
      schemes: ['http'],
      paths: {
        '/files/echo': {
          get: { parameters: [{ name: 'q', in: 'query', type: 'string' }], responses: { 200: { description: 'ok' } } },
        },
      },
    });
    await openViewer(page, site.url, `{ spec: ${spec} }`);
    await page.evaluate(
      `window.ui.api.clientAuthorizations.add('custom', ` +
        `new SwaggerClient.ApiKeyAuthorization('api key&x', 'a b&c=d/é', 'query'))`,
    );
    const op = await expandOperation(page, 'default', 'get', '/files/echo');
    await op.locator('input[name=q]').fill('x y');
    await op.locator('.qv-submit').click();
    const url = `${site.url}/files/echo?q=x%20y&api%20key%26x=a%20b%26c%3Dd%2F%C3%A9`;
    await expect(op.locator('.qv-request-url').textContent()).resolves.toBe(url);
    expect(site.seen.at(-1)?.url).toBe(url.slice(site.url.length));
  });

  it('flags empty required fields and does not send', async () => {
    await openViewer(page, site.url, `{ url: '/fixtures/petstore-2.0.json' }`);
    const before = site.seen.length;
    const op = await expandOperation(page, 'user', 'get', '/user/login');
    await op.locator('.qv-submit').click();
    await expect(op.locator('input[name=username]').getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(page.evaluate(() => document.activeElement?.getAttribute('name'))).resolves.toBe('username');
    expect(site.seen.length).toBe(before);
    await expect(op.locator('input[name=password]').getAttribute('type')).resolves.toBe('password');
  });

  it('says clearly when a server sends no cross-origin headers', async () => {
    const spec = openApiSpec('bare', bare.url, {
      '/thing': {
        post: {
          requestBody: { content: { 'application/json': { schema: { type: 'object' } } } },
          responses: { 200: { description: 'ok' } },
        },
      },
    });
    await openViewer(page, site.url, `{ spec: ${spec} }`);
    const op = await expandOperation(page, 'default', 'post', '/thing');
    await op.locator('textarea').fill('{"a":1}');
    await op.locator('.qv-submit').click();
    const message = await op.locator('.qv-response-body [role=alert]').textContent();
    expect(message).toContain('It may not have the appropriate access-control-origin settings');
    expect(message).toContain(new URL(bare.url).origin);
    expect(message).toContain('Access-Control-Allow-Headers (Content-Type)');
    await expect(op.locator('.qv-response-code').textContent()).resolves.toBe('0');
  });

  it('shows images inline, offers binary bodies as downloads and HTML as text', async () => {
    const spec = openApiSpec('files', site.url, {
      '/files/pixel.png': { get: { responses: { 200: { description: 'png' } } } },
      '/files/report.bin': { get: { responses: { 200: { description: 'bin' } } } },
      '/files/page.html': { get: { responses: { 200: { description: 'html' } } } },
    });
    await openViewer(page, site.url, `{ spec: ${spec} }`);
    const png = await expandOperation(page, 'default', 'get', '/files/pixel.png');
    await png.locator('.qv-submit').click();
    await expect(png.locator('img.qv-response-image').getAttribute('src')).resolves.toMatch(/^blob:/);
    const bin = await expandOperation(page, 'default', 'get', '/files/report.bin');
    await bin.locator('.qv-submit').click();
    await expect(bin.locator('a.qv-download').getAttribute('download')).resolves.toBe('report.bin');
    const html = await expandOperation(page, 'default', 'get', '/files/page.html');
    await html.locator('.qv-submit').click();
    await expect(html.locator('.qv-response-text').textContent()).resolves.toBe(
      '<b>bold</b><script>window.pwned=1</script>',
    );
    expect(await page.evaluate('window.pwned')).toBeUndefined();
  });

  it('sends HTTP basic credentials from SwaggerClient.PasswordAuthorization', async () => {
    await openViewer(
      page,
      site.url,
      `{ url: '/fixtures/openapi-3.0.yaml', ` +
        `authorizations: { basicAuth: new SwaggerClient.PasswordAuthorization('ünï', 'p:w') } }`,
    );
    const op = await expandOperation(page, 'keepers', 'get', '/keepers');
    await op.locator('.qv-submit').click();
    await op.locator('.qv-response-code').waitFor();
    const sent = site.seen.filter((r) => r.url === '/zoo/v1/keepers').at(-1)!;
    expect(sent.headers.authorization).toBe(`Basic ${Buffer.from('ünï:p:w').toString('base64')}`);
  });

  it('sends cookie api keys and cookie parameters as cookies to a same-site API', async () => {
    const spec = openApiSpec(
      'cookies',
      site.url,
      {
        '/files/echo/c': {
          get: {
            security: [{ session: [] }],
            parameters: [{ name: 'pref', in: 'cookie', schema: { type: 'string' } }],
            responses: { 200: { description: 'ok' } },
          },
        },
      },
      { components: { securitySchemes: { session: { type: 'apiKey', in: 'cookie', name: 'sid' } } } },
    );
    await openViewer(page, site.url, `{ spec: ${spec} }`);
    await page.locator('.qv-authorize').click();
    const form = page.locator('form.qv-auth-scheme[aria-label=session]');
    await form.getByLabel('Value').fill('s 1');
    await form.getByRole('button', { name: 'Authorize' }).click();
    const op = await expandOperation(page, 'default', 'get', '/files/echo/c');
    await op.locator('input[name=pref]').fill('dark');
    await op.locator('.qv-submit').click();
    await op.locator('.qv-response-code').waitFor();
    const cookie = String(site.seen.filter((r) => r.url === '/files/echo/c').at(-1)?.headers.cookie);
    expect(cookie).toContain('sid=s%201');
    expect(cookie).toContain('pref=dark');
  });
});
