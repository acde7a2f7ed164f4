// Cross-origin headers through @fastify/cors, as the viewer (docs/viewer.md) needs them: Allow-Origin,
// -Methods and -Headers on every answer to an allowed origin, and every header a preflight asks for
// (Content-Type, Authorization, custom api-key headers…) allowed by echoing it.
import fastifyCors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from './errors.js';

const CORS_METHODS = 'GET, PUT, POST, DELETE, PATCH, OPTIONS, HEAD';
const DEFAULT_HEADERS = 'Content-Type, Authorization, X-Cashu, X-Request-Id, api_key, X-API-Key';
const EXPOSED_HEADERS = '*, X-Request-Id, X-Cashu, Retry-After, Content-Disposition';
const PREFLIGHT_MAX_AGE_SECONDS = 600;

export async function registerCors(app: FastifyInstance, allowed: '*' | string[]) {
  const allows = (origin: string) => allowed === '*' || allowed.includes(origin);
  const shared = { origin: allowed, methods: CORS_METHODS, exposedHeaders: EXPOSED_HEADERS, strictPreflight: false };
  const forPreflight: FastifyCorsOptions = { ...shared, preflight: true, maxAge: PREFLIGHT_MAX_AGE_SECONDS };
  // An OPTIONS request that is no preflight goes on to its route (the proxy node forwards it).
  const forSimple: FastifyCorsOptions = { ...shared, preflight: false };
  const off: FastifyCorsOptions = { origin: false };

  // @fastify/cors adds an `OPTIONS *` route so that every preflight finds one. Here every path has an
  // OPTIONS route already (the proxy node's catch-all, the local prefixes' 404s), and a second would
  // clash with the proxy node's: registered without methods, it adds nothing to the router.
  app.addHook('onRoute', (route) => {
    if (route.url === '*' && route.method === 'OPTIONS') route.method = [];
  });
  await app.register(fastifyCors, {
    hook: 'onRequest',
    // Two parameters: @fastify/cors calls it with a callback (no promise per request).
    delegator(request: FastifyRequest, callback: (error: Error | null, options?: FastifyCorsOptions) => void) {
      const origin = request.headers.origin;
      if (!origin) return callback(null, off);
      const isPreflight =
        request.method === 'OPTIONS' && typeof request.headers['access-control-request-method'] === 'string';
      if (allows(origin)) return callback(null, isPreflight ? forPreflight : forSimple);
      // A refused preflight is answered 403 in the shape of the path's area, as every error (errors.ts).
      callback(isPreflight ? new HttpError(403, 'Origin not allowed') : null, off);
    },
  });
  // @fastify/cors names the methods and headers on preflights only; answers to an allowed origin
  // carry them too, as they did before this module used the plugin.
  app.addHook('onRequest', (request, reply, done) => {
    if (reply.hasHeader('access-control-allow-origin')) {
      reply.header('Access-Control-Allow-Methods', CORS_METHODS);
      reply.header('Access-Control-Allow-Headers', DEFAULT_HEADERS);
    }
    done();
  });
}
