// Fixed-window counters kept in the database, so every process sharing it enforces one limit.
// One upsert per hit: atomic on SQLite and PostgreSQL alike.
import { sql } from 'kysely';
import type { Database } from '../db/index.js';

export interface RateLimitResult {
  allowed: boolean;
  hits: number;
  /** Milliseconds until the window resets. */
  retryAfterMs: number;
}

export interface RateLimitRule {
  limit: number;
  windowMs: number;
}

/** Counts one hit against `key` and says whether it is within `rule`. */
export async function hitRateLimit(
  db: Database,
  key: string,
  rule: RateLimitRule,
  now = Date.now(),
): Promise<RateLimitResult> {
  const expired = now - rule.windowMs;
  const row = await db.kysely
    .insertInto('rate_limits')
    .values({ key, window_start: now, hits: 1 })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        hits: sql<number>`case when rate_limits.window_start <= ${expired}
          then 1 else rate_limits.hits + 1 end`,
        window_start: sql<number>`case when rate_limits.window_start <= ${expired}
          then ${now} else rate_limits.window_start end`,
      }),
    )
    .returning(['hits', 'window_start'])
    .executeTakeFirstOrThrow();
  return {
    allowed: row.hits <= rule.limit,
    hits: row.hits,
    retryAfterMs: Math.max(0, row.window_start + rule.windowMs - now),
  };
}

export async function resetRateLimit(db: Database, key: string): Promise<void> {
  await db.kysely.deleteFrom('rate_limits').where('key', '=', key).execute();
}

/** Drops windows that ended long ago; called now and then, never needed for correctness. */
export async function pruneRateLimits(db: Database, olderThanMs: number, now = Date.now()): Promise<void> {
  await db.kysely
    .deleteFrom('rate_limits')
    .where('window_start', '<', now - olderThanMs)
    .execute();
}
