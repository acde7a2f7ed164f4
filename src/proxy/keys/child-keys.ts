// Child keys (issue 14, docs/proxy-wallet.md#child-keys): keys that spend their parent's balance,
// each within its own limit per period and until its expiry. Their limit is enforced where the
// balance is, in the billing transaction (../billing/store.ts, applyBillingSteps); this module creates,
// lists, revokes and resets them for the parent.
import { randomBytes } from 'node:crypto';
import type { Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { type Authenticator, keyHash, keyPrefix } from './accounts.js';
import { periodEndOf, periodStartOf } from './key-periods.js';
import { type Account, accountById } from '../wallet/store.js';
import {
  childKeyByHash,
  type ChildKeyRow,
  childKeysOf,
  countChildKeys,
  liveChildKeysOf,
  insertChildKeys,
  resetChildKeyPeriod,
  revokeChildKey,
} from './store.js';
import type { ResetPeriod } from '../common/tables.js';

/** Most child keys one parent may have (revoked ones count: their history stays). */
export const MAX_CHILD_KEYS = 1000;

export interface ChildKeySpec {
  count: number;
  limitMsat: number | null;
  resetPeriod: ResetPeriod;
  /** Unix seconds; null: never expires. */
  validityDate: number | null;
}

const seconds = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000));

/** A child key as its parent sees it (the key itself is shown once, at creation). */
export function childKeyView(row: ChildKeyRow, now: number) {
  const freshPeriod = row.period_start < periodStartOf(row.reset_period, now);
  return {
    id: row.id,
    key_prefix: row.key_prefix,
    balance_limit: row.limit_msat,
    balance_limit_reset: row.reset_period,
    validity_date: seconds(row.expires_at),
    spent_in_period: freshPeriod ? 0 : row.period_spent_msat,
    reserved: row.reserved_msat,
    period_resets_at: seconds(periodEndOf(row.reset_period, now)),
    total_spent: row.total_spent_msat,
    total_requests: row.total_requests,
    revoked: row.revoked_at !== null,
    revoked_at: seconds(row.revoked_at),
    created_at: seconds(row.created_at)!,
    last_used_at: seconds(row.last_used_at),
  };
}

export class ChildKeys {
  constructor(
    private readonly db: Database,
    private readonly authenticator: Authenticator,
  ) {}

  /** Creates `spec.count` keys for the parent; answers Routstr's shape with the keys shown once. */
  async create(parent: Account, spec: ChildKeySpec) {
    const now = Date.now();
    if (spec.validityDate !== null && spec.validityDate * 1000 <= now) {
      throw new HttpError(400, 'validity_date must be in the future (unix seconds)', { code: 'invalid_validity_date' });
    }
    const keys = Array.from({ length: spec.count }, () => `sk-${randomBytes(32).toString('hex')}`);
    const rows = await this.db.kysely.transaction().execute(async (trx) => {
      // Counted and inserted in one transaction; two parallel creations may pass the count
      // together on PostgreSQL, which MAX_CHILD_KEYS tolerates (it bounds storage, not money).
      if ((await countChildKeys(trx, parent.id)) + spec.count > MAX_CHILD_KEYS) {
        throw new HttpError(400, `A balance may have at most ${MAX_CHILD_KEYS} child keys`, {
          code: 'too_many_child_keys',
        });
      }
      return insertChildKeys(
        trx,
        keys.map((key) => ({
          parent_account_id: parent.id,
          key_hash: keyHash(key),
          key_prefix: keyPrefix(key),
          limit_msat: spec.limitMsat,
          reset_period: spec.resetPeriod,
          period_start: now,
          expires_at: spec.validityDate === null ? null : spec.validityDate * 1000,
          revoked_at: null,
          created_at: now,
          last_used_at: null,
        })),
      );
    });
    const byHash = new Map(rows.map((row) => [row.key_hash, row]));
    const balance = (await accountById(this.db.kysely, parent.id))?.balanceMsat ?? parent.balanceMsat;
    return {
      api_keys: keys,
      count: keys.length,
      cost_msats: 0,
      cost_sats: 0,
      parent_balance: balance,
      parent_balance_sats: Math.floor(balance / 1000),
      child_keys: keys.map((key) => childKeyView(byHash.get(keyHash(key))!, now)),
    };
  }

  async list(parent: Account, page: { before?: number; limit: number }) {
    const now = Date.now();
    const rows = await childKeysOf(this.db.kysely, parent.id, page);
    return {
      child_keys: rows.map((row) => childKeyView(row, now)),
      next_before: rows.length === page.limit ? rows[rows.length - 1].id : null,
    };
  }

  /**
   * The `child_keys` of Routstr's balance info: the keys not revoked, oldest first, or undefined
   * when there are none (Routstr's node then leaves the field out). Only key hashes are stored, so
   * `api_key` is a preview (the first 12 characters and "..."), as Routstr's `parent_key_preview`:
   * enough to tell keys apart, never usable as a key.
   */
  async forInfo(parent: Account) {
    const now = Date.now();
    const rows = await liveChildKeysOf(this.db.kysely, parent.id, MAX_CHILD_KEYS);
    if (rows.length === 0) return undefined;
    return rows.map((row) => ({ api_key: `${row.key_prefix}...`, ...childKeyView(row, now) }));
  }

  /** Revokes a child key for good: its next request is refused, here and in every other process. */
  async revoke(parent: Account, id: number) {
    const row = await revokeChildKey(this.db.kysely, parent.id, id, Date.now());
    if (!row) throw noSuchChildKey();
    // This process forgets it at once; the others refuse it in the billing transaction.
    this.authenticator.forget(row.key_hash);
    return childKeyView(row, Date.now());
  }

  /** Routstr's reset: the child key's spending in its period starts afresh. */
  async reset(parent: Account, childKey: string) {
    const child = await childKeyByHash(this.db.kysely, keyHash(childKey.trim()));
    if (!child || child.parent_account_id !== parent.id) throw noSuchChildKey();
    const done = await this.db.kysely
      .transaction()
      .execute((trx) => resetChildKeyPeriod(trx, parent.id, child.id, Date.now()));
    if (!done) throw noSuchChildKey();
    return { success: true, message: 'Child key balance reset successfully.' };
  }
}

function noSuchChildKey(): HttpError {
  return new HttpError(404, 'Child key not found: the parent key has no such child key', {
    code: 'child_key_not_found',
  });
}

/**
 * 402 when a child key's limit leaves less than the request needs (Routstr's type, code and words);
 * `planned` is billing's ReservationPlanning, spelled out here as keys sit below billing.
 */
export function balanceLimitExceeded(planned: { minimumMsat: number; fullMsat: number }, limitMsat: number): HttpError {
  return new HttpError(
    402,
    `Balance limit exceeded: this key's limit leaves ${limitMsat} mSats in its period, ${planned.minimumMsat} ` +
      `minimum required for this request (${planned.fullMsat} for its full max_tokens).`,
    {
      code: 'balance_limit_exceeded',
      type: 'insufficient_quota',
      extra: { price_msat: planned.fullMsat, minimum_msat: planned.minimumMsat, limit_available_msat: limitMsat },
    },
  );
}
