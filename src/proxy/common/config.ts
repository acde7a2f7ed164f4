// Configuration of this service, read from the environment (see .env.example).
import { ConfigError, type Env, httpUrl, int, list, str, urlList } from '../../env.js';
import { loadForwardConfig, type ForwardConfig } from './forward-config.js';
import { loadNostrConfig, type NostrConfig } from './nostr-config.js';
import { loadLightningConfig, type LightningConfig } from './lightning-config.js';

export interface ProxyConfig {
  // --- wallet and accounts (docs/proxy-wallet.md) ---
  /** Trusted mints, normalized; the first one receives refunds of balances that mix mints. */
  mints: string[];
  name: string;
  description: string;
  /** Public URL of this node, shown in `GET /` and `GET /v1/info`; null when unset. */
  httpUrl: string | null;
  /** This node's Tor onion URL, shown in `GET /v1/info`; null when unset. */
  onionUrl: string | null;
  /** Time limit of one request to a mint. */
  mintTimeoutMs: number;
  /** How often pending mint operations are retried in the background. */
  recoveryIntervalMs: number;
  /** Largest amount one top-up may credit. */
  maxTopupMsat: number;
  /**
   * Token redemptions (top-ups, first uses of a token as the bearer) one client address may
   * start per minute; each costs a swap at the mint. 0: no limit.
   */
  redeemLimitPerMinute: number;
  /**
   * Tokens of mints not in PROXY_MINTS that are swapped into the primary mint (a melt paying its
   * mint quote): 'any' mint, none, or the listed (normalized) ones. See docs/proxy-wallet.md.
   */
  foreignMints: 'any' | 'none' | string[];
  /** Largest face value of one foreign-mint token. */
  foreignMaxMsat: number;
  // --- forwarding, pricing, billing, admin page (docs/proxy-billing.md, forward-config.ts) ---
  forward: ForwardConfig;
  // --- the announcement on Nostr (docs/proxy-nostr.md, nostr-config.ts) ---
  nostr: NostrConfig;
  // --- Lightning in and out (docs/proxy-wallet.md#lightning, lightning-config.ts) ---
  lightning: LightningConfig;
}

export function loadProxyConfig(env: Env): ProxyConfig {
  const mints = [...new Set(urlList(env, 'PROXY_MINTS', ['http://127.0.0.1:3338']))];
  if (mints.length === 0) throw new ConfigError('PROXY_MINTS', 'names no mint');
  return {
    mints,
    name: str(env, 'PROXY_NAME', 'quartet proxy node'),
    description: str(env, 'PROXY_DESCRIPTION', 'A Cashu-prepaid proxy to an OpenAI-compatible upstream'),
    httpUrl: httpUrl(env, 'PROXY_HTTP_URL') ?? null,
    onionUrl: httpUrl(env, 'PROXY_ONION_URL') ?? null,
    mintTimeoutMs: int(env, 'PROXY_MINT_TIMEOUT_MS', 10_000, 100, 300_000),
    recoveryIntervalMs: int(env, 'PROXY_RECOVERY_INTERVAL_MS', 30_000, 100, 86_400_000),
    maxTopupMsat: int(env, 'PROXY_MAX_TOPUP_MSAT', 1_000_000_000_000, 1000, Number.MAX_SAFE_INTEGER),
    redeemLimitPerMinute: int(env, 'PROXY_REDEEM_LIMIT_PER_MINUTE', 60, 0, 1_000_000),
    foreignMints: foreignMints(env),
    foreignMaxMsat: int(env, 'PROXY_FOREIGN_MAX_SAT', 100_000, 1, 2 ** 31 - 1) * 1000,
    forward: loadForwardConfig(env),
    nostr: loadNostrConfig(env),
    lightning: loadLightningConfig(env),
  };
}

/** PROXY_FOREIGN_MINTS: `none` (default), `any`, or a comma-separated list of mint URLs. */
function foreignMints(env: Env): 'any' | 'none' | string[] {
  const values = list(env, 'PROXY_FOREIGN_MINTS', ['none']);
  if (values.length === 1 && (values[0] === 'any' || values[0] === 'none')) return values[0];
  if (values.some((value) => value === 'any' || value === 'none')) {
    throw new ConfigError('PROXY_FOREIGN_MINTS', '`any` and `none` stand alone, not in a list of mints');
  }
  return [...new Set(urlList(env, 'PROXY_FOREIGN_MINTS', []))];
}
