// The admin page's HTML: server-rendered, every value escaped, sent with headers that forbid
// scripts, framing and foreign form targets.
import type { FastifyReply } from 'fastify';
import type { DashboardData } from '../operator/earnings.js';

/** Who is looking at the dashboard, and the CSRF token its forms carry (null: none needed). */
export interface DashboardViewer {
  principal: string;
  csrfToken: string | null;
  /** Signed in by a session (it can log out), not by a bearer token. */
  hasSession: boolean;
}

export function sendPage(reply: FastifyReply, title: string, body: string) {
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
table{border-collapse:collapse;margin:.5rem 0 1.5rem}
th,td{border:1px solid #ccc;padding:.3rem .6rem;text-align:left;vertical-align:top}
td{font-variant-numeric:tabular-nums}.error{color:#a00}.inline{display:inline}code.token{word-break:break-all}
form label{margin-right:1rem}
</style></head>
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

export function dashboardHtml(viewer: DashboardViewer, mints: string[], data: DashboardData): string {
  const { totals, holdings, accounts, requests, withdrawals } = data;
  const csrf = viewer.csrfToken ? `<input type="hidden" name="csrf" value="${esc(viewer.csrfToken)}">` : '';
  const logout = viewer.hasSession
    ? ` <form method="post" action="/admin/logout" class="inline">${csrf}<button>Log out</button></form>`
    : '';
  const total = (id: string, label: string, msat: number) =>
    `<tr><th>${esc(label)}</th><td id="${id}" data-msat="${msat}">${msatText(msat)}</td></tr>`;
  const withdrawable = Math.floor(Math.max(0, totals.earningsMsat) / 1000);
  return `
<p>Signed in as ${esc(viewer.principal)}.${logout}</p>
<h2>Node totals</h2>
<table class="totals">
${total('total-held', 'Held for users (all account balances)', totals.heldMsat)}
${total('total-reserved', 'Reserved by requests in flight', totals.reservedMsat)}
${total('total-earned', 'Earned (charged for requests, all time)', totals.earnedMsat)}
${total('total-withdrawn', 'Withdrawn by the operator', totals.withdrawnMsat)}
${total('total-earnings', 'Node earnings available', totals.earningsMsat)}
<tr><th>Accounts</th><td id="total-accounts">${totals.accounts}</td></tr>
<tr><th>Billed requests (settled / in flight)</th>\
<td id="total-requests">${totals.settledRequests} / ${totals.inFlight}</td></tr>
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
<h2>Accounts</h2>
${table(
  ['Key', 'Balance', 'Reserved', 'Spent', 'Requests', 'Mint', 'Created', 'Last use'],
  accounts.map((a) => [
    `<code>${esc(a.key_prefix ?? '?')}…</code>`,
    msatText(a.balance_msat),
    msatText(a.reserved_msat),
    msatText(a.total_spent_msat),
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
)}
<h2>Withdrawals</h2>
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
)}`;
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
