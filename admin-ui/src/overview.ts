// The overview: the summary of a period, requests and sats over time, revenue by model
// (/admin/api/usage/summary, /usage/metrics, /usage/revenue-by-model, in Routstr's shapes). One
// range toggle drives all three: the last 24 hours by hour, or the last 30 days by day.
import { get, query } from './api.js';
import { barChart, timeChart } from './charts.js';
import { field, num, rows, text } from './data.js';
import { h, table } from './dom.js';
import { count, msat, parseTime, percent, sats } from './format.js';
import { load } from './panel.js';

interface Range {
  id: string;
  label: string;
  step: string;
  hours: number;
  interval: number;
}

const RANGES: Range[] = [
  { id: 'hour', label: 'Last 24 hours, by hour', step: 'hour', hours: 24, interval: 60 },
  { id: 'day', label: 'Last 30 days, by day', step: 'day', hours: 720, interval: 1440 },
];

export function renderOverview(panels: { summary?: HTMLElement; usage?: HTMLElement; revenue?: HTMLElement }) {
  let range = RANGES[0];
  const toggle = h('div', { class: 'toggle', role: 'group', 'aria-label': 'Period of the charts' });
  const buttons = RANGES.map((r) => {
    const button = h('button', { type: 'button', 'data-range': r.id, 'aria-pressed': String(r === range) }, r.label);
    button.addEventListener('click', () => {
      range = r;
      for (const b of buttons) b.setAttribute('aria-pressed', String(b === button));
      void refresh();
    });
    return button;
  });
  toggle.append(...buttons);
  panels.usage?.before(toggle);

  async function refresh() {
    await Promise.all([
      panels.summary && load(panels.summary, 'The summary', () => summary(range)),
      panels.usage && load(panels.usage, 'The usage chart', () => usage(panels.usage!, range)),
      panels.revenue && load(panels.revenue, 'Revenue by model', () => revenue(panels.revenue!, range)),
    ]);
  }
  return refresh();
}

async function summary(range: Range): Promise<Node[]> {
  const data = await get(`/admin/api/usage/summary${query({ hours: range.hours })}`);
  const card = (label: string, value: string, id: string) =>
    h('div', { class: 'card', 'data-metric': id }, h('span', { class: 'label' }, label), h('strong', {}, value));
  return [
    h('p', { class: 'muted' }, range.label),
    h(
      'div',
      { class: 'cards' },
      card('Requests', count(field(data, 'total_requests')), 'total_requests'),
      card('Success rate', percent(field(data, 'success_rate'), 100), 'success_rate'),
      card('Revenue', msat(field(data, 'revenue_msats')), 'revenue_msats'),
      card('Refunds', msat(field(data, 'refunds_msats')), 'refunds_msats'),
      card('Net revenue', msat(field(data, 'net_revenue_msats')), 'net_revenue_msats'),
      card('Tokens', count(field(data, 'total_tokens')), 'total_tokens'),
      card('Models used', count(field(data, 'unique_models_count')), 'unique_models_count'),
      card('Errors', count(field(data, 'total_errors')), 'total_errors'),
    ),
  ];
}

interface Point {
  time: Date;
  requests: number;
  sats: number;
}

/** Buckets the chart draws at most: a period of 30 days by hour still fits. */
const MAX_BUCKETS = 1000;

/**
 * The period's buckets in time order, those without requests at zero: the answer lists only the
 * buckets that have some, and a chart of those alone would join distant points (or, for one point,
 * span years). Buckets start at multiples of the step since the epoch, as the node counts them.
 */
function withEmptyBuckets(measured: Point[], hours: number, stepMinutes: number): Point[] {
  const byTime = new Map<number, Point>();
  for (const point of measured) byTime.set(point.time.getTime(), point);
  const step = stepMinutes * 60_000;
  const now = Date.now();
  const first = Math.floor((now - hours * 3_600_000) / step) * step;
  if (step > 0 && (now - first) / step <= MAX_BUCKETS) {
    for (let time = first; time <= now; time += step) {
      if (!byTime.has(time)) byTime.set(time, { time: new Date(time), requests: 0, sats: 0 });
    }
  }
  return [...byTime.values()].sort((a, b) => a.time.getTime() - b.time.getTime());
}

async function usage(root: HTMLElement, range: Range): Promise<Node[]> {
  const data = await get(`/admin/api/usage/metrics${query({ interval: range.interval, hours: range.hours })}`);
  const measured = rows(field(data, 'metrics'))
    .map((m) => ({
      time: parseTime(field(m, 'timestamp')),
      requests: num(field(m, 'total_requests')) ?? 0,
      sats: (num(field(m, 'revenue_msats')) ?? 0) / 1000,
    }))
    .filter((p): p is Point => p.time !== null);
  if (measured.length === 0) return [h('p', { class: 'muted empty' }, 'No requests in this period.')];
  const stepMinutes = num(field(data, 'interval_minutes')) ?? range.interval;
  const points = withEmptyBuckets(measured, range.hours, stepMinutes);
  // The chart measures its box: drawn into the panel, then kept when the panel is filled.
  root.replaceChildren();
  const chart = timeChart(
    root,
    {
      times: points.map((p) => Math.floor(p.time.getTime() / 1000)),
      requests: points.map((p) => p.requests),
      sats: points.map((p) => p.sats),
    },
    range.step,
  );
  const totals = field(data, 'totals');
  const line = h(
    'p',
    { class: 'muted' },
    `${count(field(totals, 'total_requests') ?? points.reduce((n, p) => n + p.requests, 0))} requests, ` +
      `${msat(field(totals, 'revenue_msats') ?? points.reduce((n, p) => n + p.sats * 1000, 0))} earned`,
  );
  return [chart, line];
}

async function revenue(root: HTMLElement, range: Range): Promise<Node[]> {
  const data = await get(`/admin/api/usage/revenue-by-model${query({ hours: range.hours, limit: 20 })}`);
  const models = rows(field(data, 'models'));
  if (models.length === 0) return [h('p', { class: 'muted empty' }, 'No revenue in this period.')];
  root.replaceChildren();
  const chart = barChart(
    root,
    models.map((m) => text(field(m, 'model'))),
    models.map((m) => num(field(m, 'net_revenue_sats')) ?? num(field(m, 'revenue_sats')) ?? 0),
    'net sats',
  );
  const list = table(
    ['Model', 'Requests', 'Successful', 'Failed', 'Revenue', 'Refunds', 'Net', 'Per request'],
    models.map((m) => [
      text(field(m, 'model')),
      count(field(m, 'requests')),
      count(field(m, 'successful')),
      count(field(m, 'failed')),
      sats(field(m, 'revenue_sats')),
      sats(field(m, 'refunds_sats')),
      sats(field(m, 'net_revenue_sats')),
      sats(field(m, 'avg_revenue_per_request')),
    ]),
    '',
  );
  return [chart, list, h('p', { class: 'muted' }, `Total ${sats(field(data, 'total_revenue_sats'))}`)];
}
