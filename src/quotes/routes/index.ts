// The /1 routes of the quotation API (OneSky Platform API conventions): the multipart reader and
// the authentication hooks, then one file per resource.
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { readMultipartBody } from '../../http/multipart.js';
import { isRecord } from '../params.js';
import type { QuotesDeps } from './context.js';
import { registerFileRoutes } from './files.js';
import { registerOrderRoutes } from './orders.js';
import { registerProjectRoutes } from './projects.js';

export type { QuotesDeps } from './context.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A route of the quotation API that answers without credentials. */
    public?: boolean;
  }
}

export async function registerQuoteRoutes(app: FastifyInstance, deps: QuotesDeps) {
  const uploadLimits = { fileSize: deps.config.maxFileBytes, files: 1, fields: 20, fieldSize: 4096, parts: 25 };
  await app.register(multipart, {
    throwFileSizeLimit: false,
    // Keep "../x.po" as sent (busboy would strip it): a path in a file name fails the import.
    preservePath: true,
    limits: uploadLimits,
  } as Parameters<typeof multipart>[1]);
  // The whole form is read before the handler (as attachFieldsToBody would), so credentials sent
  // as parts are checked in preHandler; a malformed form is a 400/413 here, not a 500.
  app.addHook('preValidation', async (request) => {
    if (request.isMultipart()) request.body = await readMultipartBody(request, uploadLimits);
  });
  // Every route but /1/locales is signed. Credentials in the query string or a bearer header
  // are checked before the body is read (an upload is refused before it is buffered); those
  // sent in the body are checked once it is parsed.
  const isPublic = (request: FastifyRequest) => request.routeOptions.config?.public === true;
  app.addHook('onRequest', async (request) => {
    const query = isRecord(request.query) ? request.query : {};
    const inQuery = query.api_key !== undefined && query.timestamp !== undefined && query.dev_hash !== undefined;
    if (!isPublic(request) && (inQuery || request.headers.authorization)) {
      request.quotesPrincipal = await deps.authenticate(request);
    }
  });
  app.addHook('preHandler', async (request) => {
    if (!isPublic(request) && !request.quotesPrincipal) request.quotesPrincipal = await deps.authenticate(request);
  });
  registerProjectRoutes(app, deps);
  registerFileRoutes(app, deps);
  registerOrderRoutes(app, deps);
}
