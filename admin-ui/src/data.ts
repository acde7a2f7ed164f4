// The operator API's answers are data of unknown shape: read field by field through these, each
// an own property (a name in the data never reaches a prototype), narrowed before use.
import { isRecord } from '../../viewer/src/data.js';

export { asArray, isRecord } from '../../viewer/src/data.js';

/** An own field of an object; undefined for anything else. */
export function field(value: unknown, name: string): unknown {
  return isRecord(value) && Object.hasOwn(value, name) ? value[name] : undefined;
}

/** A finite number (numeric strings too, as PostgreSQL's sums may arrive); else null. */
export function num(value: unknown): number | null {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
}

/** A value as the page shows it: text for scalars, JSON for the rest, '–' for nothing. */
export function text(value: unknown): string {
  if (value === null || value === undefined || value === '') return '–';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** An array of the objects in `value` (other items skipped). */
export function rows(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}
