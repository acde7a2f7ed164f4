// Configuration of Lightning in and out (docs/proxy-wallet.md#lightning, .env.example).
import { bool, int, type Env } from '../../env.js';

export interface LightningConfig {
  /** Largest invoice one call to …/lightning/invoice may ask for. */
  maxInvoiceSats: number;
  /** Time limit of one request to a Lightning address's LNURL service. */
  lnurlTimeoutMs: number;
  /** Plain http to Lightning addresses on loopback hosts (tests, local demos); never for real ones. */
  lnurlAllowHttpLoopback: boolean;
  /** How often expired keys are refunded to their Refund-LNURL address (../lightning/expiry-refunds.ts). */
  expiryRefundIntervalMs: number;
  /** Most expired accounts one pass pays. */
  expiryRefundBatch: number;
}

export function loadLightningConfig(env: Env): LightningConfig {
  return {
    maxInvoiceSats: int(env, 'PROXY_LIGHTNING_MAX_INVOICE_SATS', 1_000_000, 1, 2 ** 31 - 1),
    lnurlTimeoutMs: int(env, 'PROXY_LNURL_TIMEOUT_MS', 10_000, 100, 120_000),
    lnurlAllowHttpLoopback: bool(env, 'PROXY_LNURL_ALLOW_HTTP_LOOPBACK', false),
    expiryRefundIntervalMs: int(env, 'PROXY_EXPIRY_REFUND_INTERVAL_MS', 60_000, 100, 86_400_000),
    expiryRefundBatch: int(env, 'PROXY_EXPIRY_REFUND_BATCH', 20, 1, 1000),
  };
}
