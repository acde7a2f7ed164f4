// Area C: translation quotations, OneSky Platform API conventions, under /1.
import { errorHandlerFor, oneSkyStyle } from '../http/errors.js';
import type { ServiceDefinition } from '../services.js';

export const service: ServiceDefinition = {
  name: 'quotes',
  openapi: { title: 'quartet quotation API', version: '1' },
  async register(app) {
    app.setErrorHandler(errorHandlerFor(oneSkyStyle));
  },
};
