// The dashboard's charts, drawn by uPlot (bundled at build time) on a canvas. Each chart's box
// carries data-points and data-total, what it plots, so a reader (and the browser test) can tell
// an empty chart from one with data.
import UPlot from 'uplot';
import type uPlot from 'uplot';
import { h } from './dom.js';

const COLORS = { requests: '#2563eb', sats: '#d97706', bars: '#059669', grid: '#e5e7eb', axis: '#4b5563' };

function box(kind: string, points: number, total: number): HTMLDivElement {
  return h('div', { class: `chart chart-${kind}`, 'data-points': points, 'data-total': total });
}

const axis = (extra: uPlot.Axis = {}): uPlot.Axis => ({
  stroke: COLORS.axis,
  grid: { stroke: COLORS.grid, width: 1 },
  ticks: { stroke: COLORS.grid, width: 1 },
  ...extra,
});

const width = (parent: HTMLElement) => Math.max(320, Math.min(parent.clientWidth || 900, 1400) - 8);

export interface TimeSeries {
  /** Unix seconds. */
  times: number[];
  requests: number[];
  sats: number[];
}

/** Requests (left axis) and sats earned (right axis) over time. */
export function timeChart(parent: HTMLElement, series: TimeSeries, stepLabel: string): HTMLDivElement {
  const total = series.requests.reduce((a, b) => a + b, 0) + series.sats.reduce((a, b) => a + b, 0);
  const target = box('time', series.times.length, total);
  parent.appendChild(target);
  const options: uPlot.Options = {
    width: width(parent),
    height: 280,
    scales: { x: { time: true }, requests: { range: (_u, _min, max) => [0, Math.max(1, max)] }, sats: {} },
    series: [
      {},
      {
        label: `Requests per ${stepLabel}`,
        scale: 'requests',
        stroke: COLORS.requests,
        fill: 'rgba(37, 99, 235, 0.12)',
        width: 2,
        value: (_u, v) => (v === null ? '–' : v.toLocaleString('en-US')),
      },
      {
        label: `Sats earned per ${stepLabel}`,
        scale: 'sats',
        stroke: COLORS.sats,
        width: 2,
        value: (_u, v) => (v === null ? '–' : v.toLocaleString('en-US', { maximumFractionDigits: 3 })),
      },
    ],
    axes: [
      axis(),
      axis({ scale: 'requests', label: 'requests', size: 60 }),
      axis({ scale: 'sats', label: 'sats', side: 1, size: 70, grid: { show: false } }),
    ],
  };
  target.dataset.drawn = String(new UPlot(options, [series.times, series.requests, series.sats], target).status === 1);
  return target;
}

/** One bar per label (revenue by model). */
export function barChart(parent: HTMLElement, labels: string[], values: number[], valueLabel: string): HTMLDivElement {
  const target = box(
    'bars',
    values.length,
    values.reduce((a, b) => a + b, 0),
  );
  parent.appendChild(target);
  const index = labels.map((_, i) => i);
  const short = (label: string) => (label.length > 24 ? `${label.slice(0, 23)}…` : label);
  const options: uPlot.Options = {
    width: width(parent),
    height: 300,
    legend: { show: false },
    cursor: { points: { show: false } },
    scales: {
      x: { time: false, range: () => [-0.5, Math.max(0, labels.length - 1) + 0.5] },
      y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] },
    },
    series: [
      {},
      {
        label: valueLabel,
        stroke: COLORS.bars,
        fill: 'rgba(5, 150, 105, 0.55)',
        paths: UPlot.paths.bars!({ size: [0.6, 80] }),
        points: { show: false },
      },
    ],
    axes: [
      axis({
        splits: () => index,
        values: (_u, splits) => splits.map((i) => short(labels[i] ?? '')),
        rotate: labels.length > 4 ? -25 : 0,
        size: labels.length > 4 ? 90 : 40,
        grid: { show: false },
      }),
      axis({ label: valueLabel, size: 70 }),
    ],
  };
  target.dataset.drawn = String(new UPlot(options, [index, values], target).status === 1);
  return target;
}
