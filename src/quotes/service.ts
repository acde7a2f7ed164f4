// The quotation API: translation quotations, OneSky Platform API conventions, under /1.
import { errorHandlerFor, oneSkyStyle } from '../http/errors.js';
import type { ServiceDefinition } from '../services.js';
import { FilePool } from './jobs/file-worker.js';
import { ImportQueue } from './jobs/import-queue.js';
import { makeAuthenticator } from './routes/auth.js';
import { registerQuoteRoutes } from './routes/index.js';

export const service: ServiceDefinition = {
  name: 'quotes',
  openapi: {
    title: 'quartet quotation API',
    version: '1',
    description:
      'OneSky Platform API compatible: projects, localization files, phrase states, quotations and orders. ' +
      'Sign requests with api_key, timestamp and dev_hash = md5(timestamp + api_secret), ' +
      'or send a bearer token of the users and tasks API.',
    securitySchemes: {
      oneSkyKey: { type: 'apiKey', in: 'query', name: 'api_key' },
      oneSkyTimestamp: { type: 'apiKey', in: 'query', name: 'timestamp' },
      oneSkyHash: { type: 'apiKey', in: 'query', name: 'dev_hash' },
      bearer: { type: 'http', scheme: 'bearer' },
    },
  },
  async register(app, context) {
    app.setErrorHandler(errorHandlerFor(oneSkyStyle));
    const { db, identity } = context;
    const config = context.config.quotes;
    // One pool per process for the CPU work on whole files (imports, exports); its threads start on demand.
    const pool = new FilePool({ threads: config.importThreads, timeoutMs: config.importTimeoutS * 1000 });
    const queue = new ImportQueue(db, config, pool, app.log);
    const authenticate = makeAuthenticator(identity, config.timestampWindowS);
    await registerQuoteRoutes(app, { db, config, authenticate, queue, pool });
    // Start the queue once the app is ready; stop it before the database closes, then the threads.
    app.addHook('onReady', async () => queue.start());
    app.addHook('preClose', async () => queue.close());
    app.addHook('onClose', async () => pool.close());
  },
};
