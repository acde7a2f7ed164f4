// The node's parts forwarding works with (built in ../service.ts): their own module, so that the
// payer, the reservation and the billed exchange all name them without importing each other.
import type { Database } from '../../db/index.js';
import type { Billing } from '../billing/billing.js';
import type { Pricing } from '../billing/pricing.js';
import type { ForwardConfig } from '../common/forward-config.js';
import type { Authenticator } from '../keys/accounts.js';
import type { RedemptionLimit } from '../keys/redeem-limit.js';
import type { NodeWallet } from '../wallet/wallet.js';
import type { Upstreams } from './upstreams.js';

export interface ForwardDeps {
  db: Database;
  config: ForwardConfig;
  wallet: NodeWallet;
  authenticator: Authenticator;
  redemptionLimit: RedemptionLimit;
  pricing: Pricing;
  upstream: Upstreams;
  billing: Billing;
}
