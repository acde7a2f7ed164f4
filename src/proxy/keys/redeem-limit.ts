// Each well-formed token a caller hands in costs a swap at the mint, forged or not. Top-ups,
// first uses of a token as the bearer and new X-Cashu tokens all count against one per-address
// limit (PROXY_REDEEM_LIMIT_PER_MINUTE), kept in the database so every process enforces it.
import type { Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { hitRateLimit } from '../../http/rate-limit.js';
import { apiKeyForToken, findAccountByKey } from './accounts.js';
import type { NodeWallet } from '../wallet/wallet.js';

export class RedemptionLimit {
  constructor(
    private readonly db: Database,
    private readonly wallet: NodeWallet,
    /** Redemptions one address may start per minute; 0: no limit. */
    private readonly perMinute: number,
  ) {}

  /** Counts one redemption from `ip`; throws 429 (OpenAI shape, Retry-After) over the limit. */
  async count(ip: string): Promise<void> {
    const rule = { limit: this.perMinute, windowMs: 60_000 };
    if (rule.limit === 0) return;
    const hit = await hitRateLimit(this.db, `proxy-redeem:${ip}`, rule);
    if (hit.allowed) return;
    const seconds = Math.max(1, Math.ceil(hit.retryAfterMs / 1000));
    throw new HttpError(
      429,
      `Too many Cashu tokens redeemed from this address (at most ${rule.limit} a minute); try again in ${seconds} s`,
      {
        code: 'rate_limit_exceeded',
        type: 'requests',
        headers: { 'Retry-After': String(seconds) },
      },
    );
  }

  /**
   * Counts a token about to be redeemed, unless it names an existing account or will be refused
   * without a swap (malformed, untrusted mint…): those cost the mint nothing.
   */
  async countToken(ip: string, token: string): Promise<void> {
    if (this.perMinute === 0) return;
    if (await findAccountByKey(this.db.kysely, apiKeyForToken(token))) return;
    if (await this.wallet.wouldSwap(token)) await this.count(ip);
  }
}
