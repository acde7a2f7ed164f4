// Area D: serves the built viewer (dist/viewer) at /docs/.
import type { ServiceDefinition } from '../services.js';

export const service: ServiceDefinition = {
  name: 'docs',
  async register(app) {
    app.get('/docs', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/docs/'));
  },
};
