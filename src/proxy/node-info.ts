// The node's own description: `GET /` (docs/proxy-wallet.md#routes), with each model and its prices
// in USD and in sats (docs/proxy-billing.md), and `GET /v1/info` in the shape of a Routstr node
// (docs/proxy-wallet.md#routstr-clients).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { ProxyConfig } from './config.js';
import type { Pricing } from './pricing.js';
import { NodeInfo, RoutstrInfo } from './schemas.js';
import type { NodeWallet } from './wallet.js';

const VERSION = '0.0.1';

export interface NodeInfoDeps {
  config: ProxyConfig;
  wallet: NodeWallet;
  pricing: Pricing;
}

export function registerNodeInfoRoutes(scope: FastifyInstance, { config, wallet, pricing }: NodeInfoDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const identity = () => ({
    name: config.name,
    description: config.description,
    version: VERSION,
    mints: wallet.mints,
    http_url: config.httpUrl,
  });
  app.get('/', { schema: { summary: 'Node information', response: { 200: NodeInfo } } }, async () => ({
    ...identity(),
    ...(await pricing.infoModels()),
  }));
  app.get(
    '/v1/info',
    {
      schema: {
        summary: 'Node information, as a Routstr node gives it',
        description: "Routstr's clients read the trusted mints here. No authentication.",
        response: { 200: RoutstrInfo },
      },
    },
    // The node has no Nostr key yet, so no npub.
    async () => ({ ...identity(), npub: null, onion_url: config.onionUrl }),
  );
}
