// Swagger UI 2.2.10's own files with quartet's bundle: its dist/index.html with only the style and
// script includes swapped (support.ts, swagger2Index), its unchanged o2c.html, and an OAuth server
// of the test's own (oauth-server.ts), all on loopback. What a 2.x site keeps must keep working:
// initOAuth from onComplete, the o2c.html redirect, the validator badge rule, the method order.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { oauthServer, openWithProvider } from './oauth-server.js';
import { expandOperation, openApiSpec, openViewer, sendText, swagger2Index, type StaticServer } from './support.js';

let site: StaticServer;
let auth: StaticServer;
let page: Page;
const provider = oauthServer();
/** Errors thrown in the page or in the popups it opened; none are expected. */
let pageErrors: string[] = [];
/** How the test's copy of 2.2.10's index.html is configured (as a site edits its own). */
let editIndex: (html: string) => string = (html) => html;
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

/** A 2.0 description of the OAuth server's /api/me with an implicit and an accessCode scheme. */
function description() {
  const { host } = new URL(auth.url);
  const scopes = { read: 'read your profile', write: 'change it' };
  return JSON.stringify({
    swagger: '2.0',
    info: { title: 'Profiles', version: '1' },
    host,
    schemes: ['http'],
    paths: {
      '/api/me': {
        get: {
          tags: ['me'],
          security: [{ implicit_auth: ['read'] }, { code_auth: ['read'] }],
          responses: { 200: { description: 'me' } },
        },
      },
    },
    securityDefinitions: {
      implicit_auth: { type: 'oauth2', flow: 'implicit', authorizationUrl: `${auth.url}/authorize`, scopes },
      code_auth: {
        type: 'oauth2',
        flow: 'accessCode',
        authorizationUrl: `${auth.url}/authorize`,
        tokenUrl: `${auth.url}/token`,
        scopes,
      },
    },
  });
}

const routes = [
  (req: any, res: any) => {
    const path = String(req.url).split('?')[0];
    if (path === '/sui2/index.html') return (sendText(res, 200, swagger2Index(editIndex), 'text/html'), true);
    if (path === '/profiles.json') return (sendText(res, 200, description(), 'application/json'), true);
    if (path === '/validator') return (sendText(res, 200, PNG, 'image/png'), true);
    return false;
  },
];

openWithProvider(provider, routes, (opened) => ({ site, auth, page } = opened));
beforeAll(() => {
  page.on('pageerror', (error) => pageErrors.push(`page: ${error.message}`));
  page.on('popup', (popup) => popup.on('pageerror', (error) => pageErrors.push(`popup: ${error.message}`)));
});
afterEach(() => {
  const errors = pageErrors;
  pageErrors = [];
  editIndex = (html) => html;
  expect(errors).toEqual([]);
});

/** Opens the 2.x page (or another page of the site) on a description and waits for its title. */
async function open2x(descriptionPath = '/profiles.json', pagePath = '/sui2/index.html') {
  await page.goto(`${site.url}${pagePath}?url=${encodeURIComponent(`${site.url}${descriptionPath}`)}`);
  await page.locator('.qv-title').waitFor();
}

/** Authorize panel → the scheme's form → Authorize; resolves when the popup has closed itself. */
async function authorizeWith(scheme: string, clientId?: string) {
  const authorizations = provider.authorizations.length;
  await page.locator('.qv-authorize').click();
  const form = page.locator(`form.qv-auth-scheme[aria-label=${scheme}]`);
  if (clientId !== undefined) await form.getByLabel('Client ID').fill(clientId);
  // The close listener goes on as the popup appears: it may close itself at once.
  const closed = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the redirect page did not close the popup')), 10_000);
    page.once('popup', (popup) =>
      popup.once('close', () => {
        clearTimeout(timer);
        resolve();
      }),
    );
  });
  await form.getByRole('button', { name: 'Authorize' }).click();
  await closed;
  expect(provider.authorizations.length).toBe(authorizations + 1);
  return { form, sent: provider.authorizations.at(-1)! };
}

async function tryMe() {
  const op = await expandOperation(page, 'me', 'get', '/api/me');
  await op.locator('.qv-submit').click();
  await op.locator('.qv-response-code').waitFor();
  return { code: await op.locator('.qv-response-code').textContent(), sent: provider.apiCalls.at(-1) };
}

describe('Swagger UI 2.2.10 index.html and o2c.html with quartet', () => {
  it('initOAuth called from onComplete: the authorize request carries its client_id and realm', async () => {
    await open2x();
    await page.locator('.qv-authorize').click();
    // 2.2.10's index.html calls initOAuth({clientId: "your-client-id", realm: "your-realms", …}).
    const form = page.locator('form.qv-auth-scheme[aria-label=implicit_auth]');
    await expect(form.getByLabel('Client ID').inputValue()).resolves.toBe('your-client-id');
    await page.locator('.qv-authorize').click(); // closed again: authorizeWith opens it
    const { sent } = await authorizeWith('implicit_auth');
    expect(sent.get('client_id')).toBe('your-client-id');
    expect(sent.get('realm')).toBe('your-realms');
    expect(sent.get('scope')).toBe('read write');
  });

  it('initOAuth: scopeSeparator and additionalQueryStringParams shape the authorize request', async () => {
    const spec = description();
    await openViewer(
      page,
      site.url,
      `{ spec: ${spec}, oauth2RedirectUrl: '${site.url}/viewer/o2c.html', ` +
        `onComplete: () => initOAuth({ clientId: 'pets-app', realm: 'pets', appName: 'Pet Shop', ` +
        `scopeSeparator: ',', additionalQueryStringParams: { audience: 'https://pets.test', state: 'not-this' } }) }`,
    );
    const { sent, form } = await authorizeWith('code_auth');
    expect(sent.get('client_id')).toBe('pets-app');
    expect(sent.get('realm')).toBe('pets');
    expect(sent.get('scope')).toBe('read,write');
    expect(sent.get('audience')).toBe('https://pets.test');
    expect(sent.get('state')).not.toBe('not-this'); // the viewer's own state is kept, it guards the answer
    await expect(form.textContent()).resolves.toContain('Pet Shop');
    await form.locator('.qv-auth-status', { hasText: 'Authorized' }).waitFor();
  });

  it('without oauth2RedirectUrl the provider returns to o2c.html next to the page', async () => {
    await open2x();
    const { sent } = await authorizeWith('implicit_auth');
    expect(sent.get('redirect_uri')).toBe(`${site.url}/sui2/o2c.html`);
    // quartet's own index.html: its o2c.html (our redirect page under 2.x's name) delivers the token.
    await open2x('/profiles.json', '/viewer/index.html');
    const ours = await authorizeWith('implicit_auth', 'our-client');
    expect(ours.sent.get('redirect_uri')).toBe(`${site.url}/viewer/o2c.html`);
    await ours.form.locator('.qv-auth-status', { hasText: 'Authorized' }).waitFor();
    const me = await tryMe();
    expect(me.code).toBe('200');
    expect(me.sent).toMatch(/^Bearer implicit-/);
  });

  it("2.2.10's own o2c.html delivers an implicit token, and try-it sends it", async () => {
    await open2x();
    const { form } = await authorizeWith('implicit_auth');
    await form.locator('.qv-auth-status', { hasText: 'Authorized' }).waitFor();
    const me = await tryMe();
    expect(me.code).toBe('200');
    expect(me.sent).toMatch(/^Bearer implicit-/);
  });

  it("2.2.10's own o2c.html with an accessCode flow: the code is exchanged, try-it sends the token", async () => {
    await open2x();
    const { form } = await authorizeWith('code_auth');
    await form.locator('.qv-auth-status', { hasText: 'Authorized' }).waitFor();
    expect(provider.exchanges.at(-1)).toMatchObject({
      grant_type: 'authorization_code',
      client_id: 'your-client-id',
      client_secret: 'your-client-secret-if-required',
      redirect_uri: `${site.url}/sui2/o2c.html`,
    });
    const me = await tryMe();
    expect(me.code).toBe('200');
    expect(me.sent).toMatch(/^Bearer code-/);
  });

  it('an explicitly set validatorUrl shows the badge for a description on localhost', async () => {
    const validator = `${site.url}/validator`;
    const specUrl = `${site.url}/fixtures/petstore-2.0.json`;
    editIndex = (html) => html.replace('docExpansion: "none",', `validatorUrl: "${validator}",\n        $&`);
    await open2x('/fixtures/petstore-2.0.json');
    const badge = page.locator('.qv-validator-badge');
    await expect(badge.getAttribute('href')).resolves.toBe(`${validator}/debug?url=${encodeURIComponent(specUrl)}`);
    await expect(badge.locator('img').getAttribute('src')).resolves.toBe(
      `${validator}?url=${encodeURIComponent(specUrl)}`,
    );
    await page.waitForFunction(() => document.querySelector<HTMLImageElement>('.qv-validator-badge img')?.complete);
    expect(site.seen.some((r) => r.url === `/validator?url=${encodeURIComponent(specUrl)}`)).toBe(true);
    // Not set (2.2.10's page as shipped): no badge for a local description.
    editIndex = (html) => html;
    await open2x('/fixtures/petstore-2.0.json');
    await expect(page.locator('.qv-validator-badge').count()).resolves.toBe(0);
  });

  it('within one path the methods of a 2.0 description are in alphabetical order, as 2.2.10 lists them', async () => {
    await open2x('/fixtures/petstore-2.0.json');
    await page.locator('.qv-tag-toggle', { hasText: /^pet$/ }).click();
    const heads = page.locator('#resource_pet .qv-op-head');
    const listed = await heads.evaluateAll((els) =>
      els.map((el) => `${el.querySelector('.qv-method')!.textContent} ${el.querySelector('.qv-path')!.textContent}`),
    );
    // The fixture has GET before DELETE on /pet/{petId}; paths keep the document's order.
    expect(listed).toEqual([
      'POST /pet',
      'GET /pet/findByStatus',
      'GET /pet/findByTags',
      'DELETE /pet/{petId}',
      'GET /pet/{petId}',
      'POST /pet/{petId}/uploadImage',
    ]);
  });

  it('an OpenAPI 3.x description keeps the order of methods it was written in', async () => {
    const ok = { responses: { 200: { description: 'ok' } } };
    const spec = openApiSpec('Order', site.url, {
      '/items': { summary: 'items', post: ok, get: ok, delete: ok },
      '/items/{id}': { patch: ok, parameters: [], put: ok, get: ok },
    });
    await openViewer(page, site.url, `{ spec: ${spec}, docExpansion: 'list' }`);
    const methods = await page.locator('.qv-op-head .qv-method').allTextContents();
    expect(methods).toEqual(['POST', 'GET', 'DELETE', 'PATCH', 'PUT', 'GET']);
  });
});
