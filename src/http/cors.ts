// Cross-origin headers, as the viewer (docs/viewer.md) and browser clients need them: Allow-Origin,
// -Methods and -Headers on every answer to an allowed origin, and every header a preflight asks for
// (Content-Type, Authorization, custom api-key headers…) allowed by echoing it. One hook of our own
// rather than @fastify/cors: the plugin builds its options anew on every request, Origin or not,
// and cost a billed request 12-20% of its CPU (bench/README.md, "CORS in one hook").
import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors.js';

const CORS_METHODS = 'GET, PUT, POST, DELETE, PATCH, OPTIONS, HEAD';
const DEFAULT_HEADERS = 'Content-Type, Authorization, X-Cashu, X-Request-Id, api_key, X-API-Key';
const EXPOSED_HEADERS = '*, X-Request-Id, X-Cashu, Retry-After, Content-Disposition';
const PREFLIGHT_MAX_AGE_SECONDS = '600';

export function registerCors(app: FastifyInstance, allowed: '*' | string[]) {
  const allows = (origin: string) => allowed === '*' || allowed.includes(origin);
  // Before authentication and routing: a preflight carries no credentials and is answered here.
  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin;
    const isPreflight =
      request.method === 'OPTIONS' && typeof request.headers['access-control-request-method'] === 'string';
    // The answer depends on the Origin (and a preflight's on the headers it asks for): caches must know.
    reply.header('vary', isPreflight ? 'Origin, Access-Control-Request-Headers' : 'Origin');
    if (origin === undefined) return done();
    if (!allows(origin)) {
      // A refused preflight is answered 403 in the shape of the path's area, as every error (errors.ts);
      // any other request goes on without cross-origin headers, which the browser then refuses to read.
      return done(isPreflight ? new HttpError(403, 'Origin not allowed') : undefined);
    }
    reply.header('access-control-allow-origin', allowed === '*' ? '*' : origin);
    reply.header('access-control-expose-headers', EXPOSED_HEADERS);
    reply.header('access-control-allow-methods', CORS_METHODS);
    if (!isPreflight) {
      reply.header('access-control-allow-headers', DEFAULT_HEADERS);
      return done();
    }
    const asked = request.headers['access-control-request-headers'];
    if (asked !== undefined) reply.header('access-control-allow-headers', asked);
    reply.header('access-control-max-age', PREFLIGHT_MAX_AGE_SECONDS);
    // Safari waits for a body on a 204 without Content-Length: 0.
    reply.code(204).header('content-length', '0').send();
  });
}
