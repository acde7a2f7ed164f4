// Brute-force limits on top of the shared database-backed counters (http/rate-limit.ts), so
// they hold across every process on one PostgreSQL. Account keys are hashed: the counters
// table never holds an email address.
import { createHash } from 'node:crypto';
import type { Database } from '../db/index.js';
import { HttpError } from '../http/errors.js';
import { hitRateLimit, resetRateLimit, type RateLimitRule } from '../http/rate-limit.js';

export function accountKey(scope: string, email: string): string {
  return `users:${scope}:account:${createHash('sha256').update(email.toLowerCase()).digest('hex').slice(0, 32)}`;
}

export function addressKey(scope: string, address: string): string {
  return `users:${scope}:address:${address}`;
}

/** Counts one attempt; a 429 with Retry-After once the window's limit is passed. */
export async function limit(db: Database, key: string, rule: RateLimitRule): Promise<void> {
  const result = await hitRateLimit(db, key, rule);
  if (!result.allowed) {
    const seconds = Math.max(1, Math.ceil(result.retryAfterMs / 1000));
    throw new HttpError(429, `Too many attempts; try again in ${seconds} s`, {
      code: 'rate_limited',
      headers: { 'Retry-After': String(seconds) },
    });
  }
}

/** Counts silently; true while within the limit. */
export async function within(db: Database, key: string, rule: RateLimitRule): Promise<boolean> {
  return (await hitRateLimit(db, key, rule)).allowed;
}

export { resetRateLimit };
