// Area B: users and tasks, mounted as the `tasks` service under /api/users and /api/tasks.
import { errorHandlerFor, problemStyle } from '../http/errors.js';
import type { ServiceDefinition } from '../services.js';

export const service: ServiceDefinition = {
  name: 'tasks',
  openapi: { title: 'quartet users and tasks API', version: '1.0.0' },
  async register(app) {
    app.setErrorHandler(errorHandlerFor(problemStyle));
  },
};
