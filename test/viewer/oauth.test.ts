// OAuth2 round trips against the test authorization server (oauth-server.ts, loopback): the
// authorization code flow with PKCE (S256), and the implicit flow, through the redirect page.
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { oauthServer, openWithProvider } from './oauth-server.js';
import { expandOperation, openViewer, type StaticServer } from './support.js';

let site: StaticServer;
let auth: StaticServer;
let page: Page;
const provider = oauthServer();
openWithProvider(provider, [], (opened) => ({ site, auth, page } = opened));

function spec(flows: Record<string, unknown>) {
  return JSON.stringify({
    openapi: '3.0.3',
    info: { title: 'oauth', version: '1' },
    servers: [{ url: auth.url }],
    paths: {
      '/api/me': { get: { tags: ['me'], security: [{ oauth: ['read'] }], responses: { 200: { description: 'me' } } } },
    },
    components: { securitySchemes: { oauth: { type: 'oauth2', flows } } },
  });
}

async function authorizeThroughPopup(p: Page) {
  await p.locator('.qv-authorize').click();
  const form = p.locator('form.qv-auth-scheme[aria-label=oauth]');
  await form.getByLabel('Client ID').fill('viewer-client');
  const popup = p.waitForEvent('popup');
  await form.getByRole('button', { name: 'Authorize' }).click();
  await popup; // the redirect page hands the answer back and closes itself
  await form.locator('.qv-auth-status', { hasText: 'Authorized' }).waitFor({ timeout: 60_000 });
}

describe('OAuth2', () => {
  it('authorization code with PKCE: popup, redirect page, token exchange, then try-it with the token', async () => {
    const flows = {
      authorizationCode: {
        authorizationUrl: `${auth.url}/authorize`,
        tokenUrl: `${auth.url}/token`,
        scopes: { read: 'read your profile' },
      },
    };
    await openViewer(
      page,
      site.url,
      `{ spec: ${spec(flows)}, oauth2RedirectUrl: '${site.url}/viewer/oauth2-redirect.html' }`,
    );
    await authorizeThroughPopup(page);
    const exchange = provider.exchanges.at(-1)!;
    expect(exchange).toMatchObject({
      grant_type: 'authorization_code',
      client_id: 'viewer-client',
      redirect_uri: `${site.url}/viewer/oauth2-redirect.html`,
    });
    expect(exchange.code_verifier.length).toBeGreaterThanOrEqual(43);
    const op = await expandOperation(page, 'me', 'get', '/api/me');
    await op.locator('.qv-submit').click();
    await expect(op.locator('.qv-response-code').textContent()).resolves.toBe('200');
    await expect(op.locator('.qv-response-text').textContent()).resolves.toContain('"user": "alice"');
  });

  it('implicit flow through the 2.x-named o2c.html page', async () => {
    const flows = { implicit: { authorizationUrl: `${auth.url}/authorize`, scopes: { read: 'read' } } };
    await openViewer(page, site.url, `{ spec: ${spec(flows)}, oauth2RedirectUrl: '${site.url}/viewer/o2c.html' }`);
    await authorizeThroughPopup(page);
    const op = await expandOperation(page, 'me', 'get', '/api/me');
    await op.locator('.qv-submit').click();
    await expect(op.locator('.qv-response-text').textContent()).resolves.toContain('implicit-');
  });
});
