// Configuration of Lightning in and out (docs/proxy-wallet.md#lightning, .env.example).
import { bool, int, type Env } from '../env.js';

export interface LightningConfig {
  /** Largest invoice one call to …/lightning/invoice may ask for. */
  maxInvoiceSats: number;
  /** Time limit of one request to a Lightning address's LNURL service. */
  lnurlTimeoutMs: number;
  /** Plain http to Lightning addresses on loopback hosts (tests, local demos); never for real ones. */
  lnurlAllowHttpLoopback: boolean;
}

export function loadLightningConfig(env: Env): LightningConfig {
  return {
    maxInvoiceSats: int(env, 'PROXY_LIGHTNING_MAX_INVOICE_SATS', 1_000_000, 1, 2 ** 31 - 1),
    lnurlTimeoutMs: int(env, 'PROXY_LNURL_TIMEOUT_MS', 10_000, 100, 120_000),
    lnurlAllowHttpLoopback: bool(env, 'PROXY_LNURL_ALLOW_HTTP_LOOPBACK', false),
  };
}
