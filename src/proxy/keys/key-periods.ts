// The spending periods of child keys (docs/proxy-wallet.md#child-keys). Periods are calendar
// periods in UTC, so that every process (and the database's clock-free SQL) agrees on when one
// begins: a day at 00:00, a week on Monday 00:00 (ISO weeks), a month on its first day.
import type { ResetPeriod } from '../common/tables.js';

export const RESET_PERIODS: readonly ResetPeriod[] = ['daily', 'weekly', 'monthly', 'none'];

const DAY_MS = 86_400_000;

/** When the period containing `nowMs` began; 0 for 'none' (one period for ever). */
export function periodStartOf(period: ResetPeriod, nowMs: number): number {
  if (period === 'none') return 0;
  const now = new Date(nowMs);
  const day = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  if (period === 'daily') return day;
  if (period === 'weekly') return day - ((now.getUTCDay() + 6) % 7) * DAY_MS;
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
}

/** When the period containing `nowMs` ends (the next reset); null for 'none'. */
export function periodEndOf(period: ResetPeriod, nowMs: number): number | null {
  if (period === 'none') return null;
  const start = new Date(periodStartOf(period, nowMs));
  if (period === 'daily') return start.getTime() + DAY_MS;
  if (period === 'weekly') return start.getTime() + 7 * DAY_MS;
  return Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1);
}
