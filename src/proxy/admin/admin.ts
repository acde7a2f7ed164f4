// `GET /admin/`: the operator's page (./admin-page.ts renders it, ./admin-data.ts holds what it
// shows and does). Login by PROXY_ADMIN_PASSWORD (only its scrypt hash is kept, compared in
// constant time, rate-limited; the session lives in the database behind an HttpOnly
// SameSite=Strict cookie) or by the bearer token of an admin of the users and tasks API. POST
// forms carry a CSRF token of the session (@fastify/csrf-protection) and must come from this origin.
import fastifyCookie from '@fastify/cookie';
import fastifyCsrfProtection from '@fastify/csrf-protection';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { bearerToken } from '../../http/auth.js';
import { HttpError } from '../../http/errors.js';
import type { ServiceContext } from '../../services.js';
import { dashboardData, withdrawEarnings } from '../operator/earnings.js';
import type { OperatorAuth } from '../operator/operator-auth.js';
import { PAGE_SESSION_COOKIE } from '../operator/operator-api.js';
import { recordAudit } from '../operator/audit.js';
import {
  dashboardHtml,
  errorHtml,
  lightningWithdrawalHtml,
  loginHtml,
  notConfiguredHtml,
  sendPage,
  withdrawalHtml,
  type DashboardViewer,
} from './admin-page.js';
import type { Lightning } from '../lightning/lightning-service.js';
import { registerAdminAssets } from './admin-assets.js';
import type { NodeWallet } from '../wallet/wallet.js';

const COOKIE = PAGE_SESSION_COOKIE;
const CSRF_ERRORS = new Set(['FST_CSRF_MISSING_SECRET', 'FST_CSRF_INVALID_TOKEN']);

interface Admin {
  principal: string;
  /** The session's id (its cookie's value); null for bearer-token callers. */
  sessionId: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The admin page's caller, set by the admin routes' own hook (null: not signed in). */
    proxyAdmin: Admin | null;
    /**
     * The admin session as @fastify/csrf-protection reads it in its `@fastify/session` mode: the
     * CSRF secret, kept in the session's database row. Null without a session (bearer callers
     * have no ambient credential to forge, so their forms need no token).
     */
    session: { csrfSecret: string } | null;
  }
}

export async function registerAdminRoutes(
  app: FastifyInstance,
  context: ServiceContext,
  wallet: NodeWallet,
  lightning: Lightning,
  auth: OperatorAuth,
) {
  const db = context.db;

  async function currentAdmin(request: FastifyRequest): Promise<void> {
    request.proxyAdmin = null;
    request.session = null;
    const bearer = bearerToken(request.headers.authorization);
    if (bearer) {
      const principal = await context.identity.fromBearer(bearer);
      if (principal?.role === 'admin') request.proxyAdmin = { principal: `user:${principal.userId}`, sessionId: null };
      return;
    }
    const id = request.cookies[COOKIE];
    if (!id) return;
    const session = await auth.findPageSession(id);
    if (!session) return;
    request.proxyAdmin = { principal: session.principal, sessionId: id };
    request.session = { csrfSecret: session.csrf };
  }

  /** The session cookie's attributes (an empty value and no age end it). */
  const sessionCookie = (request: FastifyRequest, maxAgeSeconds: number) => ({
    path: '/admin',
    maxAge: maxAgeSeconds,
    httpOnly: true,
    sameSite: 'strict' as const,
    secure: request.protocol === 'https',
  });

  await app.register(async (scope) => {
    await scope.register(fastifyCookie);
    await scope.register(fastifyCsrfProtection, {
      sessionPlugin: '@fastify/session',
      sessionKey: 'csrfSecret',
      getToken: (request) => formField(request, 'csrf'),
    });
    scope.decorateRequest('proxyAdmin', null);
    scope.decorateRequest('session', null);

    /** A session's form must carry its CSRF token (checked by the plugin, in constant time). */
    function csrfOfSession(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
      if (request.session === null) return done();
      scope.csrfProtection(request, reply, done);
    }

    async function signedIn(request: FastifyRequest) {
      if (!request.proxyAdmin) throw new HttpError(401, 'Log in first');
    }
    async function fromThisOrigin(request: FastifyRequest) {
      refuseCrossOrigin(request);
    }
    async function sessionFromThisOrigin(request: FastifyRequest) {
      if (request.session) refuseCrossOrigin(request);
    }

    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: 8192 },
      (_request, body, done) => {
        // Field names are the caller's: a table without a prototype.
        done(null, Object.assign(Object.create(null), Object.fromEntries(new URLSearchParams(body as string))));
      },
    );
    scope.setErrorHandler<FastifyError>((error, request, reply) => {
      const status = error instanceof HttpError ? error.status : (error.statusCode ?? 500);
      if (status >= 500) request.log.error({ err: error }, 'admin page error');
      let message = error.message;
      if (status >= 500 && !(error instanceof HttpError)) message = 'Internal error';
      else if (CSRF_ERRORS.has(error.code)) message = 'The form has expired; reload the page and try again';
      return sendPage(reply.code(status), 'Error', errorHtml(message));
    });
    scope.addHook('preHandler', currentAdmin);

    /** The dashboard after `notice` (a withdrawal's outcome), with its script and the session's CSRF token. */
    async function sendDashboard(request: FastifyRequest, reply: FastifyReply, notice = '') {
      const admin = request.proxyAdmin!;
      // One token of the session's secret for the forms and the script's API calls alike (the operator
      // API verifies it against the same secret); never the secret itself.
      const csrfToken = admin.sessionId ? reply.generateCsrf() : null;
      const viewer: DashboardViewer = { principal: admin.principal, csrfToken, hasSession: admin.sessionId !== null };
      const body = dashboardHtml(viewer, wallet.mints, await dashboardData(db));
      return sendPage(reply, 'Admin', notice + body, { csrf: csrfToken });
    }

    registerAdminAssets(scope);
    scope.get('/admin', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/admin/', 301));

    scope.get(
      '/admin/',
      {
        schema: {
          summary: 'Administration page (HTML)',
          description:
            'The operator page: node totals, charts of requests and revenue, provider health, mint balances, ' +
            'accounts, logs, transactions, the audit log, providers and settings, and withdrawal of the node ' +
            'earnings. Login by PROXY_ADMIN_PASSWORD or the bearer token of an admin of the users API.',
        },
      },
      async (request, reply) => {
        const admin = request.proxyAdmin;
        if (!admin) {
          if (!(await auth.passwordConfigured())) return sendPage(reply, 'Admin', notConfiguredHtml());
          return sendPage(reply, 'Admin login', loginHtml());
        }
        return sendDashboard(request, reply);
      },
    );

    scope.post('/admin/login', { schema: { hide: true } }, async (request, reply) => {
      if (!(await auth.passwordConfigured())) return sendPage(reply.code(404), 'Admin', notConfiguredHtml());
      refuseCrossOrigin(request);
      const outcome = await auth.attemptLogin(formField(request, 'password'), request.ip);
      if (outcome.kind === 'rate-limited') {
        reply.header('retry-after', String(Math.ceil(outcome.retryAfterMs / 1000)));
        return sendPage(
          reply.code(429),
          'Admin login',
          loginHtml(`Too many login attempts; try again in ${Math.ceil(outcome.retryAfterMs / 60_000)} minutes.`),
        );
      }
      if (outcome.kind !== 'ok') return sendPage(reply.code(401), 'Admin login', loginHtml('Wrong password.'));
      const session = await auth.createPageSession('password');
      reply.setCookie(COOKIE, session.id, sessionCookie(request, Math.floor(auth.pageSessionMs / 1000)));
      return reply.redirect('/admin/', 303);
    });

    // Only a session has something to end; the form checks apply to it alone.
    const sessionForm = { schema: { hide: true }, preHandler: [sessionFromThisOrigin, csrfOfSession] };
    scope.post('/admin/logout', sessionForm, async (request, reply) => {
      const sessionId = request.proxyAdmin?.sessionId;
      if (sessionId) await auth.endPageSession(sessionId);
      reply.setCookie(COOKIE, '', sessionCookie(request, 0));
      return reply.redirect('/admin/', 303);
    });

    const adminForm = { schema: { hide: true }, preHandler: [signedIn, fromThisOrigin, csrfOfSession] };
    scope.post('/admin/withdraw-ecash', adminForm, async (request, reply) => {
      const admin = request.proxyAdmin!;
      const sats = Number(formField(request, 'amount_sat'));
      if (!Number.isSafeInteger(sats) || sats <= 0) {
        throw new HttpError(400, 'The amount must be a positive whole number of sats');
      }
      const mint = formField(request, 'mint');
      const { token } = await withdrawEarnings(db, wallet, sats * 1000, mint, admin.principal);
      return sendDashboard(request, reply, withdrawalHtml(sats, mint, token) + '\n');
    });

    // The earnings paid by melting at the primary mint (./lightning-pay.ts) to an invoice or an address.
    scope.post('/admin/withdraw-lightning', adminForm, async (request, reply) => {
      const admin = request.proxyAdmin!;
      const target = formField(request, 'target').trim();
      if (target === '' || target.length > 8000) {
        throw new HttpError(400, 'Give a bolt11 invoice or a Lightning address');
      }
      const amount = formField(request, 'amount_sat');
      const sats = amount === '' ? null : Number(amount);
      const paid = await lightning.payments.withdraw(target, sats, admin.principal);
      await recordAudit(db.kysely, {
        actor: admin.principal,
        action: 'earnings.withdraw_lightning',
        target: paid.recipient,
        after: { status: paid.status, amount_msat: paid.msats },
      });
      return sendDashboard(request, reply, lightningWithdrawalHtml(paid.status, paid.recipient, paid.msats) + '\n');
    });
  });
}

/** A field of the posted form ('' when absent); the form parser above gives a string table. */
function formField(request: FastifyRequest, name: string): string {
  const form = request.body as Record<string, string> | undefined;
  return form && Object.hasOwn(form, name) ? form[name] : '';
}

/** A form posted from another site (the browser's Origin names another host) is refused. */
function refuseCrossOrigin(request: FastifyRequest) {
  const origin = request.headers.origin;
  if (typeof origin !== 'string' || origin === 'null') return;
  let host: string | null;
  try {
    host = new URL(origin).host;
  } catch {
    host = null;
  }
  // request.host honours X-Forwarded-Host when TRUST_PROXY is set.
  if (host !== request.host) throw new HttpError(403, 'Cross-origin form refused');
}
