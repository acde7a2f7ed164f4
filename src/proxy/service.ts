// Area A: the prepaid proxy node. Its routes are `/`, `/admin/`, `/v1/wallet/…` and the
// catch-all that forwards every unclaimed path upstream.
import { errorHandlerFor, openAiStyle } from '../http/errors.js';
import type { ServiceDefinition } from '../services.js';
import { registerWalletRoutes } from './wallet-routes.js';
import { registerForwardRoutes } from './forward-routes.js';

export const service: ServiceDefinition = {
  name: 'proxy',
  openapi: { title: 'quartet proxy node', version: '0.0.1' },
  async register(app, context) {
    app.setErrorHandler(errorHandlerFor(openAiStyle));
    await registerWalletRoutes(app, context);
    await registerForwardRoutes(app, context);
  },
};
