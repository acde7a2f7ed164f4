// The node's own description: `GET /` (docs/proxy-wallet.md#routes), with each model and its prices
// in USD and in sats (docs/proxy-billing.md), and `GET /v1/info` and the model list `GET /v1/models`
// (also `/models`) in the shape of a Routstr node (docs/proxy-wallet.md#routstr-clients).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { ProxyConfig } from '../common/config.js';
import { maximalCost } from '../billing/metering.js';
import type { Model, Price, Pricing } from '../billing/pricing.js';
import { NodeInfo, RoutstrInfo, RoutstrModels } from '../common/schemas.js';
import type { NodeWallet } from '../wallet/wallet.js';

/** The node's version: in GET /, GET /v1/info and the Nostr listing's `version` tag. */
export const NODE_VERSION = '0.0.1';

/** The most one request can cost, in whole sats. */
interface MaximalSats {
  max_prompt_cost: number;
  max_completion_cost: number;
  max_cost: number;
}

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
    version: NODE_VERSION,
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
    // NOSTR_NSEC's public half (docs/proxy-nostr.md); null without one.
    async () => ({ ...identity(), npub: config.nostr.key?.npub ?? null, onion_url: config.onionUrl }),
  );

  // Whole sats, rounded up: a client paying max_cost holds what the node reserves (../billing/metering.ts).
  const maximalSats = (model: Model, price: Price): MaximalSats => {
    const cost = maximalCost(model, price, config.forward);
    const sats = (msat: number) => Math.ceil(msat / 1000);
    return {
      max_prompt_cost: sats(cost.promptMsat),
      max_completion_cost: sats(cost.completionMsat),
      max_cost: sats(cost.totalMsat),
    };
  };
  const modelsSchema = {
    summary: 'The models and their prices, as a Routstr node lists them',
    description:
      "Routstr's clients size their payments from `sats_pricing.max_cost`: what the node reserves for the " +
      'largest request a model takes. `sats_pricing` is null while no BTC/USD rate is known. No authentication.',
    response: { 200: RoutstrModels },
  };
  const models = async () => ({ data: (await pricing.infoModels(maximalSats)).models });
  app.get('/v1/models', { schema: modelsSchema }, models);
  app.get('/models', { schema: { ...modelsSchema, hide: true } }, models);
}
