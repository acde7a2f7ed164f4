// `GET /`: the node's information (docs/proxy-wallet.md#routes), with each model and its prices in
// USD and in sats (docs/proxy-billing.md).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { ProxyConfig } from './config.js';
import type { Pricing } from './pricing.js';
import { NodeInfo } from './schemas.js';
import type { NodeWallet } from './wallet.js';

const VERSION = '0.0.1';

export interface NodeInfoDeps {
  config: ProxyConfig;
  wallet: NodeWallet;
  pricing: Pricing;
}

export function registerNodeInfoRoute(scope: FastifyInstance, { config, wallet, pricing }: NodeInfoDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  app.get('/', { schema: { summary: 'Node information', response: { 200: NodeInfo } } }, async () => ({
    name: config.name,
    description: config.description,
    version: VERSION,
    mints: wallet.mints,
    http_url: config.httpUrl,
    ...(await pricing.infoModels()),
  }));
}
