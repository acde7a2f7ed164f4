// Area A part 1: `GET /` node information and the seed's wallet routes under /v1/wallet/.
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../services.js';

export async function registerWalletRoutes(app: FastifyInstance, _context: ServiceContext) {
  app.get('/', { schema: { summary: 'Node information' } }, async () => ({ name: 'quartet proxy node', version: '0.0.1' }));
}
