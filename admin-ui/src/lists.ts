// The dashboard's read-only panels: provider health, balances per mint, accounts, logs,
// transactions, Lightning invoices and the audit log, each from its /admin/api/… endpoint.
import { get, query } from './api.js';
import { asArray, field, num, rows, text } from './data.js';
import { h, table } from './dom.js';
import { count, msat, percent, sats, short, when } from './format.js';
import { filterForm, input, load, loadInto, select } from './panel.js';

const PAGE = 50;

/** Previous / next buttons over `total` rows, `PAGE` at a time. */
function pager(offset: number, shown: number, total: number | null, go: (offset: number) => void): HTMLElement {
  const previous = h('button', { type: 'button', disabled: offset === 0 }, '← Newer');
  const next = h(
    'button',
    { type: 'button', disabled: total === null ? shown < PAGE : offset + shown >= total },
    'Older →',
  );
  previous.addEventListener('click', () => go(Math.max(0, offset - PAGE)));
  next.addEventListener('click', () => go(offset + PAGE));
  const range = shown === 0 ? 'none' : `${offset + 1}–${offset + shown}`;
  return h(
    'div',
    { class: 'pager' },
    previous,
    h('span', {}, `${range}${total === null ? '' : ` of ${count(total)}`}`),
    next,
  );
}

/** A JSON value folded away (long tokens, before/after states). */
function folded(value: unknown, summary = 'show'): Node | string {
  if (value === null || value === undefined || value === '') return '–';
  const body = typeof value === 'string' ? value : JSON.stringify(value, null, 1);
  return h('details', {}, h('summary', {}, summary), h('pre', { class: 'folded' }, body));
}

export function renderHealth(root: HTMLElement) {
  return load(root, 'Provider health', async () => {
    const data = await get('/admin/api/provider-health');
    const latency = field(data, 'latency_ms');
    const ms = (name: string) => {
      const n = num(field(latency, name));
      return n === null ? '–' : `${count(n)} ms`;
    };
    const providers = rows(field(data, 'providers'));
    const errorRate = num(field(data, 'error_rate')) ?? 0;
    return [
      table(
        ['Provider', 'Base URL', 'Breaker', 'Probe allowed at'],
        providers.map((p) => {
          const state = text(field(p, 'breaker'));
          return [
            text(field(p, 'name')),
            text(field(p, 'base_url')),
            h('span', { class: `badge breaker-${state}`, 'data-breaker': state }, state),
            when(field(p, 'retry_at')),
          ];
        }),
        'No upstream provider is configured.',
      ),
      h(
        'div',
        { class: 'cards' },
        ...[
          ['Requests (last hour)', count(field(data, 'requests'))],
          ['Failed', count(field(data, 'failed'))],
          ['Error rate', percent(errorRate)],
          ['Upstream 5xx', count(field(data, 'upstream_errors'))],
          ['Latency mean', ms('mean')],
          ['p50', ms('p50')],
          ['p95', ms('p95')],
          ['max', ms('max')],
        ].map(([label, value]) =>
          h(
            'div',
            { class: `card${label === 'Error rate' && errorRate > 0.05 ? ' warn' : ''}` },
            h('span', { class: 'label' }, label),
            h('strong', {}, value),
          ),
        ),
      ),
    ];
  });
}

export function renderBalances(root: HTMLElement) {
  return load(root, 'Balances per mint', async () => {
    const data = await get('/admin/api/balances');
    return [
      table(
        ['Mint', 'Unit', 'Wallet', 'Owed to users', 'Operator', 'Error'],
        rows(data).map((b) => {
          const unit = text(field(b, 'unit'));
          const amount = (name: string) => `${count(field(b, name))} ${unit}`;
          return [
            text(field(b, 'mint_url')),
            unit,
            amount('wallet_balance'),
            amount('user_balance'),
            amount('owner_balance'),
            field(b, 'error') ? h('span', { class: 'error' }, text(field(b, 'error'))) : '–',
          ];
        }),
        'No mint is trusted.',
      ),
    ];
  });
}

export function renderAccounts(root: HTMLElement) {
  const search = input('search', { type: 'search', placeholder: 'Key hash or refund address', size: 40 });
  const results = h('div', { class: 'results' });
  let offset = 0;
  const show = () =>
    loadInto(root, results, 'The accounts', async () => {
      const data = await get(
        `/admin/api/temporary-balances${query({ search: search.value.trim(), limit: PAGE, offset })}`,
      );
      const balances = rows(field(data, 'balances'));
      const totals = field(data, 'totals');
      return [
        h(
          'p',
          { class: 'muted' },
          `${count(field(data, 'total'))} accounts holding ${msat(field(totals, 'total_balance'))}, ` +
            `${msat(field(totals, 'total_spent'))} spent in ${count(field(totals, 'total_requests'))} requests`,
        ),
        table(
          ['Key hash', 'Balance', 'Spent', 'Requests', 'Refund address', 'Expires', 'Parent', 'Created'],
          balances.map((b) => {
            const key = text(field(b, 'hashed_key'));
            const parent = field(b, 'parent_key_hash');
            return [
              h('code', { title: key }, short(key, 20)),
              msat(field(b, 'balance')),
              msat(field(b, 'total_spent')),
              count(field(b, 'total_requests')),
              text(field(b, 'refund_address')),
              when(field(b, 'key_expiry_time')),
              typeof parent === 'string' ? h('code', { title: parent }, short(parent)) : '–',
              when(field(b, 'created_at')),
            ];
          }),
          search.value.trim() ? 'No account matches.' : 'No accounts yet.',
        ),
        pager(offset, balances.length, num(field(data, 'total')), (next) => {
          offset = next;
          void show();
        }),
      ];
    });
  root.replaceChildren(
    filterForm([search], () => {
      offset = 0;
      void show();
    }),
    results,
  );
  return show();
}

const LEVELS: [string, string][] = [
  ['', 'Any level'],
  ['DEBUG', 'Debug'],
  ['INFO', 'Info'],
  ['WARNING', 'Warning'],
  ['ERROR', 'Error'],
  ['CRITICAL', 'Critical'],
];

/** An access line's request and answer ("POST /v1/chat/completions → 200"); null for other lines. */
function access(entry: Record<string, unknown>): HTMLElement | null {
  const method = field(entry, 'method');
  const path = field(entry, 'path');
  if (typeof method !== 'string' || typeof path !== 'string') return null;
  const code = num(field(entry, 'status_code'));
  return h('span', { class: 'access' }, `${method} ${path}${code === null ? '' : ` → ${code}`}`);
}

export function renderLogs(root: HTMLElement) {
  const date = select('date', [['', 'Latest days']]);
  const level = select('level', LEVELS);
  const requestId = input('request_id', { placeholder: 'Request id', size: 24 });
  const search = input('search', { type: 'search', placeholder: 'Text in the message', size: 30 });
  const results = h('div', { class: 'results' });
  const show = () =>
    loadInto(root, results, 'The logs', async () => {
      const data = await get(
        `/admin/api/logs${query({
          date: date.value,
          level: level.value,
          request_id: requestId.value.trim(),
          search: search.value.trim(),
          limit: 200,
        })}`,
      );
      const logs = rows(field(data, 'logs'));
      return [
        h('p', { class: 'muted' }, `${count(field(data, 'total') ?? logs.length)} entries (at most 200 shown)`),
        table(
          ['Time', 'Level', 'Logger', 'Message', 'Request id'],
          logs.map((entry) => {
            const levelName = text(field(entry, 'levelname'));
            const id = field(entry, 'request_id');
            let idCell: Node | string = '–';
            // Routstr writes "no-request-id" on entries outside a request.
            if (typeof id === 'string' && id && id !== 'no-request-id') {
              const link = h('button', { type: 'button', class: 'link', title: 'Only this request' }, id);
              link.addEventListener('click', () => {
                requestId.value = id;
                void show();
              });
              idCell = link;
            }
            return [
              when(field(entry, 'asctime')),
              h('span', { class: `badge level-${levelName.toLowerCase()}` }, levelName),
              text(field(entry, 'name')),
              h('span', { class: 'message' }, text(field(entry, 'message')), access(entry)),
              idCell,
            ];
          }),
          'No log entry matches.',
          'data logs',
        ),
      ];
    });
  root.replaceChildren(
    filterForm([date, level, requestId, search], () => void show()),
    results,
  );
  // The days that have logs; without them the date stays "today".
  void get('/admin/api/logs/dates')
    .then((data) => {
      for (const day of asArray(field(data, 'dates'))) {
        if (typeof day === 'string') date.append(h('option', { value: day }, day));
      }
    })
    .catch(() => undefined);
  return show();
}

export function renderTransactions(root: HTMLElement) {
  const type = select('type', [
    ['', 'In and out'],
    ['in', 'In'],
    ['out', 'Out'],
  ]);
  const status = select('status', [
    ['', 'Any status'],
    ['pending', 'Pending'],
    ['collected', 'Collected'],
    ['swept', 'Swept'],
    ['issued', 'Issued'],
  ]);
  const source = select('source', [
    ['', 'Any source'],
    ['x-cashu', 'X-Cashu'],
    ['apikey', 'API key'],
    ['admin', 'Operator'],
  ]);
  const search = input('search', { type: 'search', placeholder: 'Id, token, request id or key', size: 30 });
  const results = h('div', { class: 'results' });
  let offset = 0;
  const show = () =>
    loadInto(root, results, 'The transactions', async () => {
      const data = await get(
        `/admin/api/transactions${query({
          type: type.value,
          status: status.value,
          source: source.value,
          search: search.value.trim(),
          limit: PAGE,
          offset,
        })}`,
      );
      const list = rows(field(data, 'transactions'));
      return [
        table(
          ['Time', 'Direction', 'Amount', 'Mint', 'Status', 'Source', 'Request id', 'Token'],
          list.map((t) => [
            when(field(t, 'created_at')),
            text(field(t, 'type')),
            `${count(field(t, 'amount'))} ${text(field(t, 'unit'))}`,
            text(field(t, 'mint_url')),
            text(field(t, 'status')),
            text(field(t, 'source')),
            text(field(t, 'request_id')),
            folded(field(t, 'token')),
          ]),
          'No transaction matches.',
        ),
        pager(offset, list.length, num(field(data, 'total')), (next) => {
          offset = next;
          void show();
        }),
      ];
    });
  const apply = () => {
    offset = 0;
    void show();
  };
  root.replaceChildren(filterForm([type, status, source, search], apply), results);
  return show();
}

export function renderInvoices(root: HTMLElement) {
  return load(root, 'The Lightning invoices', async () => {
    const data = await get(`/admin/api/lightning-invoices${query({ limit: PAGE })}`);
    return [
      table(
        ['Created', 'Amount', 'Status', 'Purpose', 'Description', 'Payment hash', 'Paid'],
        rows(field(data, 'invoices')).map((i) => {
          const hash = text(field(i, 'payment_hash'));
          return [
            when(field(i, 'created_at')),
            sats(field(i, 'amount_sats')),
            text(field(i, 'status')),
            text(field(i, 'purpose')),
            text(field(i, 'description')),
            h('code', { title: hash }, short(hash)),
            when(field(i, 'paid_at')),
          ];
        }),
        'No Lightning invoices yet.',
      ),
    ];
  });
}

export function renderAudit(root: HTMLElement) {
  const action = input('action', { placeholder: 'Action, e.g. settings.update', size: 28 });
  const results = h('div', { class: 'results' });
  let offset = 0;
  const show = () =>
    loadInto(root, results, 'The audit log', async () => {
      const data = await get(`/admin/api/audit-log${query({ action: action.value.trim(), limit: PAGE, offset })}`);
      const entries = rows(field(data, 'entries'));
      return [
        table(
          ['Time', 'Actor', 'Action', 'Target', 'Before', 'After'],
          entries.map((e) => [
            when(field(e, 'at')),
            text(field(e, 'actor')),
            h('code', {}, text(field(e, 'action'))),
            text(field(e, 'target')),
            folded(field(e, 'before')),
            folded(field(e, 'after')),
          ]),
          'No change recorded.',
          'data audit',
        ),
        pager(offset, entries.length, null, (next) => {
          offset = next;
          void show();
        }),
      ];
    });
  root.replaceChildren(
    filterForm([action], () => {
      offset = 0;
      void show();
    }),
    results,
  );
  return show();
}
