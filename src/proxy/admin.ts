// `GET /admin/`: the operator's page (server-rendered HTML, every value escaped). Login by
// PROXY_ADMIN_PASSWORD (only its scrypt hash is kept, compared in constant time, rate-limited;
// the session lives in the database behind an HttpOnly SameSite=Strict cookie) or by an area B
// admin's bearer token. POST forms carry the session's CSRF token and must come from this origin.
import { scrypt as scryptCallback, timingSafeEqual, createHash } from 'node:crypto';
import { promisify } from 'node:util';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerToken } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import { hitRateLimit } from '../http/rate-limit.js';
import type { ServiceContext } from '../services.js';
import { SCRYPT_PARAMS } from './forward-config.js';
import {
  createSession,
  deleteSession,
  findSession,
  mintHoldings,
  nodeTotals,
  recentAccounts,
  recentRequests,
  recentWithdrawals,
  withdrawEarnings,
} from './admin-data.js';
import type { NodeWallet } from './wallet.js';

const scrypt = promisify(scryptCallback) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: object,
) => Promise<Buffer>;

const COOKIE = 'quartet_admin';
const LOGIN_LIMITS = [
  { scope: 'ip', limit: 10, windowMs: 15 * 60_000 },
  { scope: 'all', limit: 100, windowMs: 15 * 60_000 },
];

interface Admin {
  principal: string;
  /** The session's CSRF token; null for bearer-token callers (no ambient credential to forge). */
  csrf: string | null;
  sessionId: string | null;
}

export async function registerAdminRoutes(app: FastifyInstance, context: ServiceContext, wallet: NodeWallet) {
  const config = context.config.proxy.forward;
  const db = context.db;

  async function currentAdmin(request: FastifyRequest): Promise<Admin | null> {
    const bearer = bearerToken(request.headers.authorization);
    if (bearer) {
      const principal = await context.identity.fromBearer(bearer);
      return principal?.role === 'admin'
        ? { principal: `user:${principal.userId}`, csrf: null, sessionId: null }
        : null;
    }
    const id = readCookie(request.headers.cookie, COOKIE);
    if (!id || !config.adminPassword) return null;
    const session = await findSession(db, id);
    return session ? { principal: session.principal, csrf: session.csrf, sessionId: id } : null;
  }

  /** POSTs with a session must carry its CSRF token and (when the browser says) come from this origin. */
  function checkForm(request: FastifyRequest, admin: Admin) {
    refuseCrossOrigin(request);
    if (admin.csrf === null) return;
    const sent = (request.body as Record<string, string> | undefined)?.csrf ?? '';
    if (!sameSecret(sent, admin.csrf)) throw new HttpError(403, 'The form has expired; reload the page and try again');
  }

  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: 8192 },
      (_request, body, done) => {
        // Field names are the caller's: a table without a prototype.
        done(null, Object.assign(Object.create(null), Object.fromEntries(new URLSearchParams(body as string))));
      },
    );
    scope.setErrorHandler((error, request, reply) => {
      const status = error instanceof HttpError ? error.status : ((error as { statusCode?: number }).statusCode ?? 500);
      if (status >= 500) request.log.error({ err: error }, 'admin page error');
      const message = status >= 500 && !(error instanceof HttpError) ? 'Internal error' : (error as Error).message;
      return sendPage(
        reply.code(status),
        'Error',
        `<p class="error">${esc(message)}</p><p><a href="/admin/">Back to the admin page</a></p>`,
      );
    });

    scope.get('/admin', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/admin/', 301));

    scope.get(
      '/admin/',
      {
        schema: {
          summary: 'Administration page (HTML)',
          description:
            'The operator page: node totals, mint balances, accounts, recent billed requests and withdrawal of the node earnings. Login by PROXY_ADMIN_PASSWORD or an area B admin bearer token.',
        },
      },
      async (request, reply) => {
        const admin = await currentAdmin(request);
        if (!admin) {
          if (!config.adminPassword) return sendPage(reply, 'Admin', notConfiguredHtml());
          return sendPage(reply, 'Admin login', loginHtml());
        }
        return sendPage(reply, 'Admin', await dashboardHtml(admin));
      },
    );

    scope.post('/admin/login', { schema: { hide: true } }, async (request, reply) => {
      if (!config.adminPassword) return sendPage(reply.code(404), 'Admin', notConfiguredHtml());
      refuseCrossOrigin(request);
      for (const rule of LOGIN_LIMITS) {
        const key = rule.scope === 'ip' ? `proxy-admin-login:${request.ip}` : 'proxy-admin-login:*';
        const hit = await hitRateLimit(db, key, rule);
        if (!hit.allowed) {
          reply.header('retry-after', String(Math.ceil(hit.retryAfterMs / 1000)));
          return sendPage(
            reply.code(429),
            'Admin login',
            loginHtml(`Too many login attempts; try again in ${Math.ceil(hit.retryAfterMs / 60_000)} minutes.`),
          );
        }
      }
      const password = (request.body as Record<string, string> | undefined)?.password ?? '';
      const { N, r, p, keylen } = SCRYPT_PARAMS;
      const candidate = await scrypt(password, config.adminPassword.salt, keylen, {
        N,
        r,
        p,
        maxmem: 64 * 1024 * 1024,
      });
      if (!timingSafeEqual(candidate, config.adminPassword.hash)) {
        return sendPage(reply.code(401), 'Admin login', loginHtml('Wrong password.'));
      }
      const session = await createSession(db, 'password', config.adminSessionMs);
      reply.header(
        'set-cookie',
        sessionCookie(session.id, Math.floor(config.adminSessionMs / 1000), request.protocol === 'https'),
      );
      return reply.redirect('/admin/', 303);
    });

    scope.post('/admin/logout', { schema: { hide: true } }, async (request, reply) => {
      const admin = await currentAdmin(request);
      if (admin?.sessionId) {
        checkForm(request, admin);
        await deleteSession(db, admin.sessionId);
      }
      reply.header('set-cookie', sessionCookie('', 0, request.protocol === 'https'));
      return reply.redirect('/admin/', 303);
    });

    scope.post('/admin/withdraw', { schema: { hide: true } }, async (request, reply) => {
      const admin = await currentAdmin(request);
      if (!admin) throw new HttpError(401, 'Log in first');
      checkForm(request, admin);
      const form = (request.body ?? {}) as Record<string, string>;
      const sats = Number(form.amount_sat);
      if (!Number.isSafeInteger(sats) || sats <= 0) {
        throw new HttpError(400, 'The amount must be a positive whole number of sats');
      }
      const { token } = await withdrawEarnings(db, wallet, sats * 1000, form.mint ?? '', admin.principal);
      const body = `<h2>Withdrawal issued</h2>
<p>A Cashu token worth ${esc(sats)} sat (less the mint's input fee) from ${esc(form.mint)}. Keep it: it is money. It also stays listed under "Withdrawals" below.</p>
<textarea id="withdraw-token" readonly rows="6" cols="80">${esc(token)}</textarea>
${await dashboardHtml(admin)}`;
      return sendPage(reply, 'Admin', body);
    });
  });

  async function dashboardHtml(admin: Admin): Promise<string> {
    const [totals, holdings, accounts, requests, withdrawals] = await Promise.all([
      nodeTotals(db),
      mintHoldings(db),
      recentAccounts(db),
      recentRequests(db),
      recentWithdrawals(db),
    ]);
    const csrf = admin.csrf ? `<input type="hidden" name="csrf" value="${esc(admin.csrf)}">` : '';
    const total = (id: string, label: string, msat: number) =>
      `<tr><th>${esc(label)}</th><td id="${id}" data-msat="${msat}">${msatText(msat)}</td></tr>`;
    return `
<p>Signed in as ${esc(admin.principal)}.${admin.sessionId ? ` <form method="post" action="/admin/logout" class="inline">${csrf}<button>Log out</button></form>` : ''}</p>
<h2>Node totals</h2>
<table class="totals">
${total('total-held', 'Held for users (all account balances)', totals.heldMsat)}
${total('total-reserved', 'Reserved by requests in flight', totals.reservedMsat)}
${total('total-earned', 'Earned (charged for requests, all time)', totals.earnedMsat)}
${total('total-withdrawn', 'Withdrawn by the operator', totals.withdrawnMsat)}
${total('total-earnings', 'Node earnings available', totals.earningsMsat)}
<tr><th>Accounts</th><td id="total-accounts">${totals.accounts}</td></tr>
<tr><th>Billed requests (settled / in flight)</th><td id="total-requests">${totals.settledRequests} / ${totals.inFlight}</td></tr>
</table>
<h2>Mint balances (proofs the node holds)</h2>
${table(
  ['Mint', 'Unit', 'Unspent', 'Being spent', 'Proofs'],
  holdings.map((h) => [
    esc(h.mintUrl),
    esc(h.unit),
    `<span class="mint-balance" data-mint="${esc(h.mintUrl)}" data-amount="${h.unspent}">${esc(h.unspent)}</span>`,
    esc(h.reserved),
    esc(h.proofs),
  ]),
  'No proofs held yet.',
)}
<h2>Withdraw node earnings</h2>
<form method="post" action="/admin/withdraw" id="withdraw-form">${csrf}
<label>Mint <select name="mint">${wallet.mints.map((m) => `<option>${esc(m)}</option>`).join('')}</select></label>
<label>Amount (sat) <input name="amount_sat" type="number" min="1" max="${Math.floor(Math.max(0, totals.earningsMsat) / 1000)}" value="${Math.floor(Math.max(0, totals.earningsMsat) / 1000)}" required></label>
<button>Withdraw as a Cashu token</button>
</form>
<h2>Accounts</h2>
${table(
  ['Key', 'Balance', 'Reserved', 'Spent', 'Requests', 'Mint', 'Created', 'Last use'],
  accounts.map((a) => [
    `<code>${esc(a.key_prefix ?? '?')}…</code>`,
    msatText(Number(a.balance_msat)),
    msatText(Number(a.reserved_msat)),
    msatText(Number(a.total_spent_msat)),
    esc(a.total_requests),
    esc(`${a.mint_url} (${a.unit})`),
    timeText(a.created_at),
    timeText(a.last_used_at),
  ]),
  'No accounts yet.',
)}
<h2>Recent billed requests</h2>
${table(
  ['#', 'Time', 'Key', 'Model', 'Path', 'Paid by', 'Status', 'Reserved', 'Charged', 'Tokens in/out', 'Upstream'],
  requests.map((r) => [
    esc(r.id),
    timeText(r.created_at),
    `<code>${esc(r.key_prefix ?? '?')}…</code>`,
    esc(r.model),
    esc(r.path) + (Number(r.stream) ? ' (stream)' : ''),
    esc(r.payment),
    esc(r.status),
    msatText(Number(r.reserved_msat)),
    msatText(Number(r.charged_msat)),
    r.prompt_tokens === null
      ? '–'
      : `${esc(r.prompt_tokens)} / ${esc(r.completion_tokens)}${r.usage_source === 'estimate' ? ' (estimated)' : ''}`,
    esc(r.upstream_status ?? '–'),
  ]),
  'No billed requests yet.',
)}
<h2>Withdrawals</h2>
${table(
  ['#', 'Time', 'Amount', 'Mint', 'Status', 'By', 'Token'],
  withdrawals.map((w) => [
    esc(w.id),
    timeText(w.created_at),
    msatText(Number(w.amount_msat)),
    esc(w.mint_url),
    esc(w.status) + (w.error ? `: ${esc(w.error)}` : ''),
    esc(w.created_by),
    w.token ? `<details><summary>show</summary><code class="token">${esc(w.token)}</code></details>` : '–',
  ]),
  'No withdrawals yet.',
)}`;
  }
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

function notConfiguredHtml(): string {
  return `<p>The admin page is not configured. Set <code>PROXY_ADMIN_PASSWORD</code> (at least 12 characters) in the environment or in <code>.env</code> and restart the node, or call this page with <code>Authorization: Bearer &lt;token&gt;</code> of an admin user of the users service.</p>`;
}

function loginHtml(message?: string): string {
  return `${message ? `<p class="error">${esc(message)}</p>` : ''}
<form method="post" action="/admin/login" id="login-form">
<label>Password <input type="password" name="password" autocomplete="current-password" required autofocus></label>
<button>Log in</button>
</form>`;
}

function sendPage(reply: FastifyReply, title: string, body: string) {
  return reply
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header(
      'content-security-policy',
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff').send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} · quartet proxy node</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem;max-width:80rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}th,td{border:1px solid #ccc;padding:.3rem .6rem;text-align:left;vertical-align:top}
td{font-variant-numeric:tabular-nums}.error{color:#a00}.inline{display:inline}code.token{word-break:break-all}
form label{margin-right:1rem}
</style></head>
<body><h1>quartet proxy node · ${esc(title)}</h1>
${body}
</body></html>`);
}

function table(headers: string[], rows: string[][], empty: string): string {
  if (rows.length === 0) return `<p>${esc(empty)}</p>`;
  return `<table><thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>
${rows.map((row) => `<tr>${row.map((cell) => `<td>${cell}</td>`).join('')}</tr>`).join('\n')}
</tbody></table>`;
}

/** Escapes text for HTML content and double-quoted attributes. */
export function esc(value: unknown): string {
  return String(value ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

function msatText(msat: number): string {
  return `${esc(msat.toLocaleString('en-US'))} msat`;
}

function timeText(ms: unknown): string {
  if (ms === null || ms === undefined) return '–';
  return esc(
    new Date(Number(ms))
      .toISOString()
      .replace('T', ' ')
      .replace(/\.\d+Z$/, ' UTC'),
  );
}

function readCookie(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

function sessionCookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  return `${COOKIE}=${value}; Path=/admin; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** Constant-time comparison of two secrets of any length (compares their digests). */
function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}
