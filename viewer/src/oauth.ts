// OAuth2 in the browser: implicit and authorization code with PKCE (S256) through a popup that
// returns to oauth2RedirectUrl (our o2c.html / oauth2-redirect.html, or 2.x's own o2c.html), plus
// password and client credentials straight to the token endpoint. The state value ties an answer
// to its request. initOAuth() settings apply whenever they arrive (2.x pages call it from onComplete).
import type { OAuthFlow } from './normalize/model.js';
import { isRecord } from './data.js';
import { t } from './i18n.js';
import { globalsOf, isHolder } from './page.js';

/** What a 2.x page passes to initOAuth(). */
export interface OAuthSettings {
  clientId?: string;
  clientSecret?: string;
  realm?: string;
  appName?: string;
  scopeSeparator?: string;
  /** additionalQueryStringParams as pairs: the page's keys never become object properties. */
  extraParams: [string, string][];
}

/** Dispatched on every OAuth form of the page (class qv-oauth) when initOAuth() changes the settings. */
export const OAUTH_SETTINGS_EVENT = 'quartet-oauth-settings';
/** Parameters of the authorize request the viewer sets itself; additionalQueryStringParams cannot replace them. */
const OWN_PARAMS = new Set([
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'realm',
  'code_challenge',
  'code_challenge_method',
]);
const MAX_EXTRA_PARAMS = 50;

let settings: OAuthSettings = { extraParams: [] };

export function oauthSettings(): OAuthSettings {
  return settings;
}

/** initOAuth(config): the new settings, applied to the Authorize panels already on the page too. */
export function configureOAuth(config: unknown) {
  const c = (config && typeof config === 'object' ? config : {}) as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  const extra = c.additionalQueryStringParams;
  settings = {
    clientId: text(c.clientId),
    clientSecret: text(c.clientSecret),
    realm: text(c.realm),
    appName: text(c.appName),
    scopeSeparator: text(c.scopeSeparator),
    extraParams:
      extra && typeof extra === 'object'
        ? Object.entries(extra)
            .filter(([name, value]) => !OWN_PARAMS.has(name) && value != null)
            .slice(0, MAX_EXTRA_PARAMS)
            .map(([name, value]) => [name, String(value)])
        : [],
  };
  for (const form of Array.from(document.querySelectorAll('.qv-oauth'))) {
    form.dispatchEvent(new Event(OAUTH_SETTINGS_EVENT));
  }
}

export interface OAuthRequest {
  flow: OAuthFlow;
  /** The security scheme's name (2.x's swaggerUiAuth.OAuthSchemeKey). */
  schemeName?: string;
  clientId: string;
  clientSecret?: string;
  scopes: string[];
  redirectUrl: string;
  username?: string;
  password?: string;
}

interface Pending {
  state: string;
  verifier?: string;
  request: OAuthRequest;
  resolve(token: string): void;
  reject(error: Error): void;
}

let pending: Pending | undefined;

function base64Url(bytes: Uint8Array) {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

function randomText(length = 32) {
  return base64Url(crypto.getRandomValues(new Uint8Array(length)));
}

export async function pkceChallenge(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64Url(new Uint8Array(digest));
}

/** The redirect page hands back the parameters of its address (query and fragment). */
export function receive(params: Record<string, string>) {
  const current = pending;
  if (!current || params.state !== current.state) return;
  pending = undefined;
  if (params.error) {
    current.reject(new Error(`${params.error}${params.error_description ? `: ${params.error_description}` : ''}`));
  } else if (params.access_token) current.resolve(params.access_token);
  else if (params.code) {
    exchange(current.request, {
      grant_type: 'authorization_code',
      code: params.code,
      redirect_uri: current.request.redirectUrl,
      code_verifier: current.verifier!,
    }).then(current.resolve, current.reject);
  } else current.reject(new Error(t('The authorization server answered without a token or code.')));
}

export function installReceiver() {
  const w = globalsOf(window);
  // 2.x's o2c.html reads opener.swaggerUiAuth.tokenUrl, then calls opener.processOAuthCode(params)
  // when it is set (access code) or opener.onOAuthComplete(params); ours calls onOAuthComplete.
  // Both end in receive(), which exchanges a code itself (with the PKCE verifier).
  w.swaggerUiAuth ??= { tokenName: 'access_token', tokenUrl: null };
  w.onOAuthComplete = (params: Record<string, string>) => receive(params);
  w.processOAuthCode = (params: Record<string, string>) => receive(params);
  window.addEventListener('message', (event) => {
    if (event.data && event.data.type === 'oauth2-redirect' && event.data.params) receive(event.data.params);
  });
}

/** An absolute http(s) address from a discovery document, else undefined. */
function endpoint(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    return /^https?:$/.test(new URL(value).protocol) ? value : undefined;
  } catch {
    return undefined;
  }
}

function strings(value: unknown, fallback: string[]): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : fallback;
}

/**
 * OpenID Connect: `wanted` with the endpoints of the provider's discovery document
 * (`openIdConnectUrl`), if the provider offers that flow (response_types_supported for the
 * flows through the browser, grant_types_supported for client credentials).
 */
export async function openIdFlow(configUrl: string, wanted: OAuthFlow): Promise<OAuthFlow> {
  const url = new URL(configUrl, document.baseURI).href;
  let config: unknown;
  try {
    const response = await fetch(url, { headers: { Accept: 'application/json' } });
    if (!response.ok) throw new Error(String(response.status));
    config = await response.json();
  } catch (error) {
    throw new Error(`${t('The OpenID Connect configuration could not be read:')} ${url} (${(error as Error).message})`);
  }
  if (!isRecord(config)) {
    throw new Error(`${t('The OpenID Connect configuration could not be read:')} ${url}`);
  }
  const authorizationUrl = endpoint(config.authorization_endpoint);
  const tokenUrl = endpoint(config.token_endpoint);
  const responseTypes = strings(config.response_types_supported, []);
  // The specification's default when the document does not say.
  const grants = strings(config.grant_types_supported, ['authorization_code', 'implicit']);
  const offered =
    wanted.kind === 'authorizationCode'
      ? !!authorizationUrl && !!tokenUrl && responseTypes.includes('code')
      : wanted.kind === 'implicit'
        ? !!authorizationUrl && responseTypes.includes('token')
        : wanted.kind === 'clientCredentials' && !!tokenUrl && grants.includes('client_credentials');
  if (!offered) throw new Error(`${t('The OpenID Connect provider does not offer this flow:')} ${wanted.kind}`);
  return { ...wanted, authorizationUrl, tokenUrl };
}

async function exchange(request: OAuthRequest, fields: Record<string, string>): Promise<string> {
  const body = new URLSearchParams({ ...fields, client_id: request.clientId });
  if (request.clientSecret) body.set('client_secret', request.clientSecret);
  if (request.scopes.length && fields.grant_type !== 'authorization_code') body.set('scope', request.scopes.join(' '));
  let response: globalThis.Response;
  try {
    response = await fetch(request.flow.tokenUrl!, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body,
    });
  } catch {
    throw new Error(
      `${t('The token endpoint could not be reached (cross-origin headers missing?):')} ${request.flow.tokenUrl}`,
    );
  }
  const data = await response.json().catch(() => ({}));
  if (!response.ok || typeof data.access_token !== 'string') {
    throw new Error(
      `${t('Token request failed')} (${response.status}): ${data.error_description ?? data.error ?? 'no access_token'}`,
    );
  }
  return data.access_token;
}

export async function authorize(request: OAuthRequest): Promise<string> {
  const { flow } = request;
  if (flow.kind === 'password') {
    return exchange(request, {
      grant_type: 'password',
      username: request.username ?? '',
      password: request.password ?? '',
    });
  }
  if (flow.kind === 'clientCredentials') return exchange(request, { grant_type: 'client_credentials' });
  if (!flow.authorizationUrl) throw new Error(t('No authorization URL.'));
  const state = randomText(16);
  const url = new URL(flow.authorizationUrl, document.baseURI);
  for (const [name, value] of settings.extraParams) url.searchParams.set(name, value);
  url.searchParams.set('response_type', flow.kind === 'implicit' ? 'token' : 'code');
  url.searchParams.set('client_id', request.clientId);
  url.searchParams.set('redirect_uri', request.redirectUrl);
  if (settings.realm) url.searchParams.set('realm', settings.realm);
  if (request.scopes.length) url.searchParams.set('scope', request.scopes.join(settings.scopeSeparator ?? ' '));
  url.searchParams.set('state', state);
  let verifier: string | undefined;
  if (flow.kind === 'authorizationCode') {
    verifier = randomText(48);
    url.searchParams.set('code_challenge', await pkceChallenge(verifier));
    url.searchParams.set('code_challenge_method', 'S256');
  }
  pending?.reject(new Error(t('Superseded by a new authorization.')));
  // What 2.x's o2c.html and pages read from the opener while the popup is out.
  const w = globalsOf(window);
  w.swaggerUiAuth = Object.assign(isHolder(w.swaggerUiAuth) ? w.swaggerUiAuth : {}, {
    OAuthSchemeKey: request.schemeName,
    tokenName: 'access_token',
    tokenUrl: flow.kind === 'authorizationCode' ? (flow.tokenUrl ?? null) : null,
  });
  return new Promise<string>((resolve, reject) => {
    pending = { state, verifier, request, resolve, reject };
    const popup = window.open(url.href, 'oauth2', 'width=600,height=700');
    if (!popup) {
      pending = undefined;
      reject(new Error(t('The authorization window was blocked.')));
    }
  });
}
