// The admin page's script (bundled into /admin/assets/admin.js by scripts/build-admin-ui.mjs). The
// page is rendered by the node (src/proxy/admin/admin-page.ts) with a box per panel (data-panel);
// this fills each from the operator API. Each panel stands alone: one that fails says so.
import 'uplot/dist/uPlot.min.css';
import './styles.css';
import {
  renderAccounts,
  renderAudit,
  renderBalances,
  renderHealth,
  renderInvoices,
  renderLogs,
  renderTransactions,
} from './lists.js';
import { renderOverview } from './overview.js';
import { renderProviders } from './providers.js';
import { renderSettings } from './settings.js';

const PANELS = new Map<string, (root: HTMLElement) => Promise<void>>([
  ['health', renderHealth],
  ['balances', renderBalances],
  ['accounts', renderAccounts],
  ['logs', renderLogs],
  ['transactions', renderTransactions],
  ['invoices', renderInvoices],
  ['providers', renderProviders],
  ['settings', renderSettings],
  ['audit', renderAudit],
]);

function boot() {
  const panel = (name: string) => document.querySelector<HTMLElement>(`[data-panel="${name}"]`) ?? undefined;
  const work: Promise<void>[] = [
    renderOverview({ summary: panel('summary'), usage: panel('usage'), revenue: panel('revenue') }),
  ];
  for (const [name, render] of PANELS) {
    const root = panel(name);
    if (root) work.push(render(root));
  }
  // Every panel has drawn (or said it cannot): a mark for readers that wait, such as the browser test.
  void Promise.allSettled(work).then(() => document.body.setAttribute('data-dashboard', 'ready'));
}

boot();
