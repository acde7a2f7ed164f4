// How numbers and times read on the page.
import { num } from './data.js';

const whole = new Intl.NumberFormat('en-US');
const upTo3 = new Intl.NumberFormat('en-US', { maximumFractionDigits: 3 });

export const count = (value: unknown) => {
  const n = num(value);
  return n === null ? '–' : whole.format(n);
};

/** Millisatoshis as sats ("1,234.5 sat"). */
export const msat = (value: unknown) => {
  const n = num(value);
  return n === null ? '–' : `${upTo3.format(n / 1000)} sat`;
};

export const sats = (value: unknown) => {
  const n = num(value);
  return n === null ? '–' : `${upTo3.format(n)} sat`;
};

/** A share as a percentage: `scale` 1 for a fraction (0.25), 100 for a percentage already (25). */
export const percent = (value: unknown, scale: 1 | 100 = 1) => {
  const n = num(value);
  return n === null ? '–' : `${upTo3.format(scale === 1 ? n * 100 : n)} %`;
};

/** Routstr's bucket times have no zone ("2025-01-31 12:00:00"): they are UTC. */
const ZONELESS = /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?$/;

/** Unix seconds, milliseconds or a date text; null when it is none of them. */
export function parseTime(value: unknown): Date | null {
  let date: Date | null = null;
  if (typeof value === 'number' && Number.isFinite(value)) date = new Date(value > 1e12 ? value : value * 1000);
  else if (typeof value === 'string' && value !== '') {
    date = new Date(ZONELESS.test(value) ? `${value.replace(' ', 'T')}Z` : value);
  }
  return date && !Number.isNaN(date.getTime()) ? date : null;
}

/** A time as "2025-01-31 12:00:00 UTC". */
export function when(value: unknown): string {
  const date = parseTime(value);
  if (!date) return typeof value === 'string' && value ? value : '–';
  return date
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
}

/** A long identifier cut to its start (the whole stays in the title). */
export function short(value: string, length = 16): string {
  return value.length > length ? `${value.slice(0, length)}…` : value;
}
