// Configuration of forwarding, pricing, billing and the admin page of the proxy node; part of
// ProxyConfig as `forward`. Every variable is documented in .env.example and docs/proxy-billing.md.
import { randomBytes, scryptSync } from 'node:crypto';
import { ConfigError, type Env, bool, httpUrl, int, optionalStr, urlList } from '../../env.js';
import { implicitProvider, loadProviders, type ProviderConfig } from './providers.js';

export interface AdminPasswordHash {
  salt: Buffer;
  hash: Buffer;
}

export interface ForwardConfig {
  /** Base URL requests are forwarded to; the request path is appended to its path. */
  upstreamUrl: string;
  /** The operator's key, sent upstream as `Authorization: Bearer …`; null sends none. */
  upstreamKey: string | null;
  connectTimeoutMs: number;
  /** Longest silence from the upstream: before its headers, and between two body chunks. */
  upstreamTimeoutMs: number;
  /**
   * Most requests in flight to the upstream at once (each holds one HTTP/1.1 connection); beyond
   * it a request waits in the queue below, or is refused with 503 and Retry-After. 0: no limit.
   */
  upstreamConnections: number;
  /** Most requests waiting for a place under `upstreamConnections` (0: none wait, 503 at once). */
  upstreamQueue: number;
  /** Longest a request waits in that queue before its 503. */
  upstreamQueueTimeoutMs: number;
  /** JSON file of models and prices; null uses the bundled ../billing/models.default.json. */
  modelsFile: string | null;
  /** Fixed BTC/USD rate as a decimal string; null uses the price feeds. */
  btcUsd: string | null;
  priceFeeds: string[];
  priceCacheMs: number;
  /** How long the last good feed rate may still be used while every feed fails. */
  priceMaxAgeMs: number;
  priceFeedTimeoutMs: number;
  /** Output tokens reserved when a request names no max_tokens. */
  maxOutputTokens: number;
  /** Fewest output tokens a request is forwarded with when a small balance clamps it. */
  minOutputTokens: number;
  /** Largest body of a billed JSON request (it is parsed to price it). */
  maxBodyBytes: number;
  /** Largest non-streaming billed response (it is parsed to read its usage). */
  maxResponseBytes: number;
  /** Forward POST/PUT/PATCH/DELETE on paths without a model price (charged `writePriceMsat` each). */
  forwardUnbilledWrites: boolean;
  /** The price of one such write, in msat. */
  writePriceMsat: number;
  /** A reservation whose heartbeat is older than this belongs to a dead process and is released. */
  staleReservationMs: number;
  /** scrypt hash of PROXY_ADMIN_PASSWORD; the password itself is not kept. */
  adminPassword: AdminPasswordHash | null;
  adminSessionMs: number;
  /** The upstreams (PROXY_PROVIDERS_FILE), or the one of PROXY_UPSTREAM_URL and PROXY_UPSTREAM_KEY. */
  providers: ProviderConfig[];
  /** Consecutive failures after which a provider is skipped while others can serve (circuit breaker). */
  breakerFailures: number;
  /** How long a provider stays skipped before one probe request may try it again. */
  breakerCooldownMs: number;
  /** How often the model lists of providers with `fetch_models` are read again. */
  providersRefreshMs: number;
}

export const SCRYPT_PARAMS = { N: 16384, r: 8, p: 1, keylen: 32 } as const;

export function hashAdminPassword(password: string, salt = randomBytes(16)): AdminPasswordHash {
  const { N, r, p, keylen } = SCRYPT_PARAMS;
  return { salt, hash: scryptSync(password, salt, keylen, { N, r, p }) };
}

/** A positive decimal number as text ("97000", "97000.25"), kept exact. */
function decimal(env: Env, name: string): string | null {
  const value = optionalStr(env, name);
  if (value === undefined) return null;
  if (!/^\d+(\.\d+)?$/.test(value) || Number(value) <= 0) {
    throw new ConfigError(name, `expected a positive decimal number, got "${value}"`);
  }
  return value;
}

export function loadForwardConfig(env: Env): ForwardConfig {
  const password = optionalStr(env, 'PROXY_ADMIN_PASSWORD');
  if (password !== undefined && password.length < 12) {
    throw new ConfigError('PROXY_ADMIN_PASSWORD', 'must have at least 12 characters');
  }
  const maxOutputTokens = int(env, 'PROXY_MAX_OUTPUT_TOKENS', 4096, 1, 10_000_000);
  const upstreamConnections = int(env, 'PROXY_UPSTREAM_CONNECTIONS', 0, 0, 1_000_000);
  const upstreamQueue = int(env, 'PROXY_UPSTREAM_QUEUE', 0, 0, 1_000_000);
  if (upstreamQueue > 0 && upstreamConnections === 0) {
    // Without a limit nothing ever waits: a queue set alone is a mistake worth saying so.
    throw new ConfigError('PROXY_UPSTREAM_QUEUE', 'needs PROXY_UPSTREAM_CONNECTIONS (a limit) to queue behind');
  }
  const upstreamUrl = httpUrl(env, 'PROXY_UPSTREAM_URL', 'http://127.0.0.1:8001')!;
  const upstreamKey = optionalStr(env, 'PROXY_UPSTREAM_KEY') ?? null;
  const providersFile = optionalStr(env, 'PROXY_PROVIDERS_FILE');
  return {
    upstreamUrl,
    upstreamKey,
    connectTimeoutMs: int(env, 'PROXY_UPSTREAM_CONNECT_TIMEOUT_MS', 5_000, 10, 600_000),
    upstreamTimeoutMs: int(env, 'PROXY_UPSTREAM_TIMEOUT_MS', 300_000, 10, 3_600_000),
    upstreamConnections,
    upstreamQueue,
    upstreamQueueTimeoutMs: int(env, 'PROXY_UPSTREAM_QUEUE_TIMEOUT_MS', 10_000, 10, 600_000),
    modelsFile: optionalStr(env, 'PROXY_MODELS_FILE') ?? null,
    btcUsd: decimal(env, 'PROXY_BTC_USD'),
    priceFeeds: urlList(env, 'PROXY_PRICE_FEEDS', []),
    priceCacheMs: int(env, 'PROXY_PRICE_CACHE_SECONDS', 300, 1, 86_400) * 1000,
    priceMaxAgeMs: int(env, 'PROXY_PRICE_MAX_AGE_SECONDS', 3600, 1, 7 * 86_400) * 1000,
    priceFeedTimeoutMs: int(env, 'PROXY_PRICE_FEED_TIMEOUT_MS', 5_000, 10, 120_000),
    maxOutputTokens,
    minOutputTokens: Math.min(maxOutputTokens, int(env, 'PROXY_MIN_OUTPUT_TOKENS', 16, 1, 10_000_000)),
    maxBodyBytes: int(env, 'PROXY_MAX_BODY_BYTES', 8 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxResponseBytes: int(env, 'PROXY_MAX_RESPONSE_BYTES', 64 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    forwardUnbilledWrites: bool(env, 'PROXY_FORWARD_UNBILLED_WRITES', true),
    writePriceMsat: int(env, 'PROXY_WRITE_PRICE_MSAT', 1000, 1, 1_000_000_000_000),
    staleReservationMs: int(env, 'PROXY_STALE_RESERVATION_SECONDS', 600, 5, 7 * 86_400) * 1000,
    adminPassword: password === undefined ? null : hashAdminPassword(password),
    adminSessionMs: int(env, 'PROXY_ADMIN_SESSION_HOURS', 12, 1, 24 * 90) * 3_600_000,
    providers: providersFile ? loadProviders(providersFile, env) : [implicitProvider(upstreamUrl, upstreamKey)],
    breakerFailures: int(env, 'PROXY_BREAKER_FAILURES', 3, 1, 1000),
    breakerCooldownMs: int(env, 'PROXY_BREAKER_COOLDOWN_SECONDS', 30, 1, 86_400) * 1000,
    providersRefreshMs: int(env, 'PROXY_PROVIDERS_REFRESH_SECONDS', 3600, 10, 7 * 86_400) * 1000,
  };
}
