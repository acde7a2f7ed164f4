// The /1 routes of the quotation API (OneSky Platform API conventions): the body readers (multipart,
// JSON, forms) and the authentication hooks, then one file per resource, then the 404 of the
// paths under /1 that have no route.
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from '../../http/errors.js';
import { parseForm } from '../../http/form.js';
import { installJsonParser } from '../../http/json-depth.js';
import { readMultipartBody } from '../../http/multipart.js';
import { isRecord } from '../common/params.js';
import { registerAttachmentRoutes } from './collection-attachments.js';
import type { QuotesDeps } from './context.js';
import { registerFileRoutes } from './files.js';
import { registerGroupRoutes } from './groups.js';
import { registerOrderRoutes } from './orders.js';
import { registerPhraseCollectionRoutes } from './phrase-collections.js';
import { registerProjectRoutes } from './projects.js';
import { registerScreenshotRoutes } from './screenshots.js';
import { registerTranslationRoutes } from './translations.js';

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
    // Keep a file name's path as sent (busboy would strip "../"): its base name is saved, a ".." refused.
    preservePath: true,
    limits: uploadLimits,
  } as Parameters<typeof multipart>[1]);
  // OneSky's clients send JSON, forms (the request library's `form:`, PHP's http_build_query) or
  // nothing at all with a JSON content type (Ruby's DELETE): all are parameters, an empty body none.
  installJsonParser(app, { emptyIsNoBody: true });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseForm(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  // Every route but /1/locales and the 404 of unknown paths is signed.
  const isPublic = (request: FastifyRequest) => request.routeOptions.config?.public === true;
  // The whole form is read before the handler (as attachFieldsToBody would), so credentials sent
  // as parts are checked in preHandler; a malformed form is a 400/413 here, not a 500. A public
  // route reads none (an upload to an unknown path is answered 404 unread).
  app.addHook('preValidation', async (request) => {
    if (request.isMultipart() && !isPublic(request)) request.body = await readMultipartBody(request, uploadLimits);
  });
  // Credentials in the query string or a bearer header are checked before the body is read (an
  // upload is refused before it is buffered); those sent in the body are checked once it is parsed.
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
  registerGroupRoutes(app, deps);
  registerFileRoutes(app, deps);
  registerTranslationRoutes(app, deps);
  registerScreenshotRoutes(app, deps);
  registerOrderRoutes(app, deps);
  registerPhraseCollectionRoutes(app, deps);
  registerAttachmentRoutes(app, deps);
  // Every other path under /1, whatever the method: a 404 in OneSky's shape, after its body is read
  // by this scope's parsers (a form-encoded body is no 415 here), and before any authentication.
  app.route({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/1/*',
    exposeHeadRoute: false,
    config: { public: true },
    schema: { hide: true },
    handler: async (request) => {
      throw new HttpError(404, `No route ${request.method} ${request.url.split('?')[0]}`);
    },
  });
}
