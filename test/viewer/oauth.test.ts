// OAuth2 round trips against a small authorization server written here (loopback): the
// authorization code flow with PKCE (S256), and the implicit flow, through the redirect page.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { expandOperation, launchBrowser, openViewer, sendText, startStatic, type StaticServer } from './support.js';

let browser: Browser;
let site: StaticServer;
let auth: StaticServer;
let page: Page;
const codes = new Map<string, { challenge: string; redirect: string; clientId: string }>();
const tokens = new Set<string>();
const exchanges: Record<string, string>[] = [];

/** The authorization server: /authorize (redirects back at once), /token, and /api/me. */
function authorizationServer(req: any, res: any, body: string) {
  const url = new URL(req.url, 'http://x');
  const cors = {
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Allow-Headers': 'Authorization, Content-Type',
    'Access-Control-Allow-Methods': 'GET, POST',
  };
  if (req.method === 'OPTIONS') return (sendText(res, 204, '', 'text/plain', cors), true);
  if (url.pathname === '/authorize') {
    const q = url.searchParams;
    const redirect = new URL(q.get('redirect_uri')!);
    if (q.get('response_type') === 'code') {
      if (q.get('code_challenge_method') !== 'S256') {
        return (sendText(res, 400, 'PKCE S256 required', 'text/plain'), true);
      }
      const code = randomBytes(8).toString('hex');
      codes.set(code, { challenge: q.get('code_challenge')!, redirect: redirect.href, clientId: q.get('client_id')! });
      redirect.searchParams.set('code', code);
      redirect.searchParams.set('state', q.get('state')!);
      res.writeHead(302, { Location: redirect.href });
    } else {
      const token = `implicit-${randomBytes(4).toString('hex')}`;
      tokens.add(token);
      res.writeHead(302, {
        Location:
          `${redirect.href}#access_token=${token}&token_type=Bearer` + `&state=${encodeURIComponent(q.get('state')!)}`,
      });
    }
    res.end();
    return true;
  }
  if (url.pathname === '/token' && req.method === 'POST') {
    const form = Object.fromEntries(new URLSearchParams(body));
    exchanges.push(form);
    const grant = codes.get(form.code);
    const verified =
      grant &&
      createHash('sha256')
        .update(form.code_verifier ?? '')
        .digest('base64url') === grant.challenge;
    if (!grant || !verified || grant.redirect !== form.redirect_uri || grant.clientId !== form.client_id) {
      return (sendText(res, 400, JSON.stringify({ error: 'invalid_grant' }), 'application/json', cors), true);
    }
    codes.delete(form.code);
    const token = `code-${randomBytes(4).toString('hex')}`;
    tokens.add(token);
    return (
      sendText(res, 200, JSON.stringify({ access_token: token, token_type: 'Bearer' }), 'application/json', cors),
      true
    );
  }
  if (url.pathname === '/api/me') {
    const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    return (
      sendText(
        res,
        tokens.has(token) ? 200 : 401,
        JSON.stringify(tokens.has(token) ? { user: 'alice', token } : { error: 'unauthorized' }),
        'application/json',
        cors,
      ),
      true
    );
  }
  return false;
}

beforeAll(async () => {
  [browser, site, auth] = await Promise.all([launchBrowser(), startStatic(), startStatic([authorizationServer])]);
  page = await browser.newPage();
});
afterAll(async () => {
  await browser?.close();
  await Promise.all([site?.close(), auth?.close()]);
});

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
  await form.locator('.qv-auth-status', { hasText: 'Authorized' }).waitFor({ timeout: 10_000 });
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
    const exchange = exchanges.at(-1)!;
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
