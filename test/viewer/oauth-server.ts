// A small OAuth 2 / OpenID Connect authorization server for the viewer's browser tests (loopback,
// mounted on a startStatic server): /authorize answers at once with a redirect, /token exchanges
// codes (PKCE S256 checked) and serves the password and client-credentials grants, /api/me is an
// API that wants one of the tokens it issued, and /.well-known/openid-configuration describes it.
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll } from 'vitest';
import { launchBrowser, sendText, startStatic, type BrowserPage, type Handler, type StaticServer } from './support.js';

export interface OAuthServer {
  handler: Handler;
  /** The query of every /authorize request, oldest first. */
  authorizations: URLSearchParams[];
  /** The form of every /token request, oldest first. */
  exchanges: Record<string, string>[];
  /** The Authorization header of every /api/me request, oldest first. */
  apiCalls: string[];
}

const CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'Authorization, Content-Type',
  'Access-Control-Allow-Methods': 'GET, POST',
};

function json(res: ServerResponse, status: number, body: unknown) {
  sendText(res, status, JSON.stringify(body), 'application/json', CORS);
  return true;
}

export function oauthServer(): OAuthServer {
  const codes = new Map<string, { challenge: string; redirect: string; clientId: string }>();
  const tokens = new Set<string>();
  const server: OAuthServer = { handler, authorizations: [], exchanges: [], apiCalls: [] };

  function issue(prefix: string) {
    const token = `${prefix}-${randomBytes(4).toString('hex')}`;
    tokens.add(token);
    return token;
  }

  function authorize(url: URL, res: ServerResponse) {
    const q = url.searchParams;
    server.authorizations.push(q);
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
      const fragment = new URLSearchParams({ access_token: issue('implicit'), token_type: 'Bearer' });
      fragment.set('state', q.get('state')!);
      res.writeHead(302, { Location: `${redirect.href}#${fragment}` });
    }
    res.end();
    return true;
  }

  function token(res: ServerResponse, body: string) {
    const form = Object.fromEntries(new URLSearchParams(body));
    server.exchanges.push(form);
    if (form.grant_type === 'client_credentials' || form.grant_type === 'password') {
      return json(res, 200, { access_token: issue(form.grant_type), token_type: 'Bearer' });
    }
    const grant = codes.get(form.code);
    const verifier = createHash('sha256')
      .update(form.code_verifier ?? '')
      .digest('base64url');
    if (
      !grant ||
      verifier !== grant.challenge ||
      grant.redirect !== form.redirect_uri ||
      grant.clientId !== form.client_id
    ) {
      return json(res, 400, { error: 'invalid_grant' });
    }
    codes.delete(form.code);
    return json(res, 200, { access_token: issue('code'), token_type: 'Bearer' });
  }

  function handler(req: IncomingMessage, res: ServerResponse, body: string) {
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
    if (req.method === 'OPTIONS') return (sendText(res, 204, '', 'text/plain', CORS), true);
    if (url.pathname === '/authorize') return authorize(url, res);
    if (url.pathname === '/token' && req.method === 'POST') return token(res, body);
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(res, 200, {
        issuer: url.origin,
        authorization_endpoint: `${url.origin}/authorize`,
        token_endpoint: `${url.origin}/token`,
        response_types_supported: ['code', 'token'],
        grant_types_supported: ['authorization_code', 'implicit', 'client_credentials'],
        scopes_supported: ['openid', 'profile'],
        code_challenge_methods_supported: ['S256'],
      });
    }
    if (url.pathname === '/api/me') {
      const header = String(req.headers.authorization ?? '');
      server.apiCalls.push(header);
      const presented = header.replace(/^Bearer /, '');
      return tokens.has(presented)
        ? json(res, 200, { user: 'alice', token: presented })
        : json(res, 401, { error: 'unauthorized' });
    }
    return false;
  }

  return server;
}

export interface ProviderPage extends BrowserPage {
  /** The OAuth server's own loopback origin (another origin than the site's). */
  auth: StaticServer;
}

/**
 * Before the tests of the file: Chromium with one page (10 s default waits), the static site with
 * `routes`, and `provider` on a server of its own; all closed after them.
 */
export function openWithProvider(
  provider: OAuthServer,
  routes: Handler[],
  ready: (opened: ProviderPage) => void,
): void {
  let close = async () => {};
  beforeAll(async () => {
    const [browser, site, auth] = await Promise.all([
      launchBrowser(),
      startStatic(routes),
      startStatic([provider.handler]),
    ]);
    close = async () => {
      await browser.close();
      await Promise.all([site.close(), auth.close()]);
    };
    const page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    ready({ site, auth, page });
  });
  afterAll(() => close());
}
