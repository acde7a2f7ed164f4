// Routstr's operator API at Routstr's paths (`/admin/api/…` and `/admin/withdraw`), so that
// routstr-cli and Routstr's admin UI work against this node (docs/proxy-operator.md). Every route
// but login needs an operator (./operator-auth.ts): a bearer token, or the admin page's cookie
// session, whose changes must also carry its CSRF token in `X-CSRF-Token` and come from this origin.
// Errors carry Routstr's `detail` (a string, as its clients show it) beside OpenAI's `error`; invalid
// fields answer FastAPI's 422 `{detail: [{loc, msg, type}]}`.
import fastifyCookie from '@fastify/cookie';
import CsrfTokens from '@fastify/csrf';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Database } from '../../db/index.js';
import { bearerToken } from '../../http/auth.js';
import { HttpError } from '../../http/errors.js';
import type { ProxyConfig } from '../common/config.js';
import type { OperatorAuth } from './operator-auth.js';

/** The admin page's session cookie (../admin/admin.ts sets it; the API accepts it). */
export const PAGE_SESSION_COOKIE = 'quartet_admin';

/** An error of the operator API: Routstr's `detail` string and OpenAI's `error` object. */
export function operatorError(status: number, code: string, message: string, headers?: Record<string, string>) {
  return new HttpError(status, message, { code, detail: message, ...(headers ? { headers } : {}) });
}

export interface Operator {
  /** Who acts, as the audit log names them: `password`, `cli-token:<id>:<name>`, `user:<id>`. */
  actor: string;
  /** The bearer token the call came with (logout ends it); null for the page's session. */
  bearer: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The operator calling /admin/api/… (set by the API's hook; null only on its public routes). */
    operator: Operator | null;
  }
  interface FastifyContextConfig {
    /** A route of the operator API that needs no operator (login). */
    operatorPublic?: boolean;
  }
}

/** What the API's route groups are handed (built once in ../service.ts). */
export interface OperatorDeps {
  db: Database;
  config: ProxyConfig;
  auth: OperatorAuth;
}

export type OperatorRoutes = (scope: FastifyInstance) => Promise<void> | void;

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The operator of a request, or the error that refuses it. */
async function operatorOf(request: FastifyRequest, auth: OperatorAuth): Promise<Operator> {
  const bearer = bearerToken(request.headers.authorization);
  if (bearer) {
    const actor = await auth.actorOfBearer(bearer);
    if (actor) return { actor, bearer };
    throw unauthorized('Unauthorized: the token is unknown, expired or revoked');
  }
  const sessionId = request.cookies[PAGE_SESSION_COOKIE];
  const session = sessionId ? await auth.findPageSession(sessionId) : null;
  if (!session) throw unauthorized('Unauthorized: log in first (POST /admin/api/login)');
  if (!SAFE_METHODS.has(request.method)) {
    // A cookie is ambient: a change needs the session's CSRF token and this origin.
    // The page's token, made from the session's secret by @fastify/csrf-protection (../admin/admin.ts).
    const sent = request.headers['x-csrf-token'];
    if (typeof sent !== 'string' || !csrfTokens.verify(session.csrf, sent)) {
      throw operatorError(403, 'csrf_token_invalid', 'The X-CSRF-Token header is missing or wrong; reload the page');
    }
    if (!sameOrigin(request)) throw operatorError(403, 'cross_origin', 'Cross-origin request refused');
  }
  return { actor: session.principal, bearer: null };
}

const unauthorized = (message: string) =>
  operatorError(401, 'unauthorized', message, { 'www-authenticate': 'Bearer realm="quartet operator"' });

const csrfTokens = CsrfTokens();

function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (typeof origin !== 'string') return true;
  try {
    return new URL(origin).host === request.host;
  } catch {
    return false;
  }
}

/** Registers the operator API: the authentication hook, then each group of routes. */
export async function registerOperatorApi(app: FastifyInstance, deps: OperatorDeps, groups: OperatorRoutes[]) {
  await app.register(async (scope) => {
    await scope.register(fastifyCookie);
    scope.decorateRequest('operator', null);
    // Before the body is read: a caller without credentials learns nothing of the routes' schemas.
    scope.addHook('onRequest', async (request) => {
      if (request.routeOptions.config.operatorPublic) return;
      request.operator = await operatorOf(request, deps.auth);
    });
    for (const group of groups) await group(scope);
  });
}

/** The operator of a request past the hook. */
export function operatorOfRequest(request: FastifyRequest): Operator {
  if (!request.operator) throw operatorError(401, 'unauthorized', 'Unauthorized');
  return request.operator;
}
