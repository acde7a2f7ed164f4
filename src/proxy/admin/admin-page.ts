// The admin page's HTML: server-rendered, every value escaped, sent with headers that forbid
// scripts, framing and foreign form targets.
import type { FastifyReply } from 'fastify';
import type { DashboardData } from '../operator/earnings.js';
import { ADMIN_SCRIPT, ADMIN_STYLES } from './admin-assets.js';

/** Who is looking at the dashboard, and the CSRF token its forms carry (null: none needed). */
export interface DashboardViewer {
  principal: string;
  csrfToken: string | null;
  /** Signed in by a session (it can log out), not by a bearer token. */
  hasSession: boolean;
}

/** The page's policy: its own script and stylesheet only (no inline script or style), calls to this origin. */
const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/**
 * Sends an admin page. `script`: the dashboard's script is loaded, and `csrf` (the session's CSRF
 * token, null for a bearer caller) is handed to it in a meta tag for its `X-CSRF-Token` header.
 * The empty icon (a data: URL, which img-src allows) keeps browsers from asking for /favicon.ico,
 * a path the proxy's catch-all would forward upstream and refuse without a key.
 */
export function sendPage(reply: FastifyReply, title: string, body: string, script?: { csrf: string | null }) {
  const head = script
    ? `\n<meta name="csrf-token" content="${esc(script.csrf ?? '')}">\n<script src="${ADMIN_SCRIPT}" defer></script>`
    : '';
  return reply
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', PAGE_CSP)
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff').send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} · quartet proxy node</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ADMIN_STYLES}">${head}
</head>
<body><h1>quartet proxy node · ${esc(title)}</h1>
${body}
</body></html>`);
}

export function errorHtml(message: string): string {
  return `<p class="error">${esc(message)}</p><p><a href="/admin/">Back to the admin page</a></p>`;
}

export function notConfiguredHtml(): string {
  return `<p>The admin page is not configured. Set <code>PROXY_ADMIN_PASSWORD</code> (at least 12 characters) \
in the environment or in <code>.env</code> and restart the node, or call this page with \
<code>Authorization: Bearer &lt;token&gt;</code> of an admin user of the users service.</p>`;
}

export function loginHtml(message?: string): string {
  return `${message ? `<p class="error">${esc(message)}</p>` : ''}
<form method="post" action="/admin/login" id="login-form">
<label>Password <input type="password" name="password" autocomplete="current-password" required autofocus></label>
<button>Log in</button>
</form>`;
}

export function withdrawalHtml(sats: number, mint: string, token: string): string {
  return `<h2>Withdrawal issued</h2>
<p>A Cashu token worth ${esc(sats)} sat (less the mint's input fee) from ${esc(mint)}. Keep it: it is money. \
It also stays listed under "Withdrawals" below.</p>
<textarea id="withdraw-token" readonly rows="6" cols="80">${esc(token)}</textarea>`;
}

export function lightningWithdrawalHtml(status: string, recipient: string, msats: number): string {
  return `<h2>Lightning withdrawal ${esc(status)}</h2>
<p id="withdraw-lightning-status" data-status="${esc(status)}">${msatText(msats)} to ${esc(recipient)}: ${esc(status)}.
A pending payment is finished by the recovery; it stays listed under "Withdrawals" below.</p>`;
}

/** The sections of the dashboard, in the order of its navigation. */
const SECTIONS = [
  ['overview', 'Overview'],
  ['health', 'Provider health'],
  ['mints', 'Mints and withdrawal'],
  ['accounts', 'Accounts'],
  ['logs', 'Logs'],
  ['transactions', 'Transactions'],
  ['requests', 'Billed requests'],
  ['providers', 'Providers'],
  ['settings', 'Settings'],
  ['audit', 'Audit log'],
] as const;

/** A place the dashboard's script fills from the operator API (./admin-assets.ts serves the script). */
const panel = (name: string) =>
  `<div class="panel" id="${name}-panel" data-panel="${name}"><p class="muted">Loading…</p>\
<noscript><p>This panel needs JavaScript.</p></noscript></div>`;

export function dashboardHtml(viewer: DashboardViewer, mints: string[], data: DashboardData): string {
  const { totals, holdings, requests, withdrawals } = data;
  const csrf = viewer.csrfToken ? `<input type="hidden" name="csrf" value="${esc(viewer.csrfToken)}">` : '';
  const logout = viewer.hasSession
    ? ` <form method="post" action="/admin/logout" class="inline">${csrf}<button>Log out</button></form>`
    : '';
  const total = (id: string, label: string, msat: number) =>
    `<tr><th>${esc(label)}</th><td id="${id}" data-msat="${msat}">${msatText(msat)}</td></tr>`;
  const withdrawable = Math.floor(Math.max(0, totals.earningsMsat) / 1000);
  const section = (id: string, body: string) => {
    const title = SECTIONS.find(([name]) => name === id)![1];
    return `<section id="${id}"><h2>${esc(title)}</h2>\n${body}\n</section>`;
  };
  return `
<div class="signed-in">Signed in as ${esc(viewer.principal)}.${logout}</div>
<nav id="sections">${SECTIONS.map(([id, title]) => `<a href="#${id}">${esc(title)}</a>`).join(' ')}</nav>
${section(
  'overview',
  `<div class="overview"><table class="totals">
${total('total-held', 'Held for users (all account balances)', totals.heldMsat)}
${total('total-reserved', 'Reserved by requests in flight', totals.reservedMsat)}
${total('total-earned', 'Earned (charged for requests, all time)', totals.earnedMsat)}
${total('total-withdrawn', 'Withdrawn by the operator', totals.withdrawnMsat)}
${total('total-earnings', 'Node earnings available', totals.earningsMsat)}
<tr><th>Accounts</th><td id="total-accounts">${totals.accounts}</td></tr>
<tr><th>Billed requests (settled / in flight)</th>\
<td id="total-requests">${totals.settledRequests} / ${totals.inFlight}</td></tr>
</table>
${panel('summary')}</div>
<h3>Requests and sats over time</h3>
${panel('usage')}
<h3>Revenue by model</h3>
${panel('revenue')}`,
)}
${section('health', panel('health'))}
${section(
  'mints',
  `<h3>Proofs the node holds</h3>
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
<h3>Balances per mint (wallet, users, operator)</h3>
${panel('balances')}
<h3>Withdraw node earnings</h3>
<form method="post" action="/admin/withdraw-ecash" id="withdraw-form">${csrf}
<label>Mint <select name="mint">${mints.map((m) => `<option>${esc(m)}</option>`).join('')}</select></label>
<label>Amount (sat) \
<input name="amount_sat" type="number" min="1" max="${withdrawable}" value="${withdrawable}" required></label>
<button>Withdraw as a Cashu token</button>
</form>
<form method="post" action="/admin/withdraw-lightning" id="withdraw-lightning-form">${csrf}
<label>Pay to (bolt11 invoice or Lightning address) <input name="target" size="60" required></label>
<label>Amount for an address (sat) <input name="amount_sat" type="number" min="1" max="${withdrawable}"></label>
<button>Withdraw by Lightning</button>
<small>(melted at ${esc(mints[0])}; the Lightning fee reserve and the mint's input fee
come from the earnings too, the unused reserve goes back)</small>
</form>
<h3>Withdrawals</h3>
${table(
  ['#', 'Time', 'Amount', 'Mint', 'Status', 'By', 'Token'],
  withdrawals.map((w) => [
    esc(w.id),
    timeText(w.created_at),
    msatText(w.amount_msat),
    esc(w.mint_url),
    esc(w.status) + (w.error ? `: ${esc(w.error)}` : ''),
    esc(w.created_by),
    w.token ? `<details><summary>show</summary><code class="token">${esc(w.token)}</code></details>` : '–',
  ]),
  'No withdrawals yet.',
)}`,
)}
${section('accounts', panel('accounts'))}
${section('logs', panel('logs'))}
${section('transactions', `${panel('transactions')}\n<h3>Lightning invoices</h3>\n${panel('invoices')}`)}
${section(
  'requests',
  `<p>The latest 50.</p>
${table(
  ['#', 'Time', 'Key', 'Model', 'Path', 'Paid by', 'Status', 'Reserved', 'Charged', 'Tokens in/out', 'Upstream'],
  requests.map((r) => [
    esc(r.id),
    timeText(r.created_at),
    `<code>${esc(r.key_prefix ?? '?')}…</code>`,
    esc(r.model),
    esc(r.path) + (r.stream ? ' (stream)' : ''),
    esc(r.payment),
    esc(r.status),
    msatText(r.reserved_msat),
    msatText(r.charged_msat),
    r.prompt_tokens === null
      ? '–'
      : `${esc(r.prompt_tokens)} / ${esc(r.completion_tokens)}${r.usage_source === 'estimate' ? ' (estimated)' : ''}`,
    esc(r.upstream_status ?? '–'),
  ]),
  'No billed requests yet.',
)}`,
)}
${section('providers', panel('providers'))}
${section('settings', panel('settings'))}
${section('audit', panel('audit'))}`;
}

function table(headers: string[], rows: string[][], empty: string): string {
  if (rows.length === 0) return `<p>${esc(empty)}</p>`;
  return `<table><thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>
${rows.map((row) => `<tr>${row.map((cell) => `<td>${cell}</td>`).join('')}</tr>`).join('\n')}
</tbody></table>`;
}

const HTML_ESCAPES = new Map([
  ['&', '&amp;'],
  ['<', '&lt;'],
  ['>', '&gt;'],
  ['"', '&quot;'],
  ["'", '&#39;'],
]);

/** Escapes text for HTML content and double-quoted attributes. */
export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => HTML_ESCAPES.get(c)!);
}

function msatText(msat: number): string {
  return `${esc(msat.toLocaleString('en-US'))} msat`;
}

function timeText(ms: number | null): string {
  if (ms === null) return '–';
  return esc(
    new Date(ms)
      .toISOString()
      .replace('T', ' ')
      .replace(/\.\d+Z$/, ' UTC'),
  );
}
