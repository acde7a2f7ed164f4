// Cross-origin headers, as the viewer (docs/viewer.md) needs them: Allow-Origin, -Methods and
// -Headers on every answer to an allowed origin, and every header a preflight asks for
// (Content-Type, Authorization, custom api-key headers…) allowed by echoing it. The headers are
// @fastify/cors's (used here before), in one callback hook: the plugin rebuilt its options twice
// on every request, with or without an Origin (bench/README.md, "Where a billed request's CPU goes").
import type { FastifyInstance } from 'fastify';
import { HttpError } from './errors.js';

const CORS_METHODS = 'GET, PUT, POST, DELETE, PATCH, OPTIONS, HEAD';
const DEFAULT_HEADERS = 'Content-Type, Authorization, X-Cashu, X-Request-Id, api_key, X-API-Key';
const EXPOSED_HEADERS = '*, X-Request-Id, X-Cashu, Retry-After, Content-Disposition';
const PREFLIGHT_MAX_AGE_SECONDS = '600';

export async function registerCors(app: FastifyInstance, allowed: '*' | string[]) {
  const allows = (origin: string) => allowed === '*' || allowed.includes(origin);
  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin;
    // An OPTIONS request that is no preflight goes on to its route (the proxy node forwards it).
    const isPreflight =
      request.method === 'OPTIONS' && typeof request.headers['access-control-request-method'] === 'string';
    // A refused preflight is answered 403 in the shape of the path's area, as every error (errors.ts).
    if (origin && isPreflight && !allows(origin)) return done(new HttpError(403, 'Origin not allowed'));
    // The answer depends on the Origin header (or its absence): caches keep them apart.
    reply.header('vary', 'Origin');
    if (!origin || !allows(origin)) return done();
    reply.header('access-control-allow-origin', allowed === '*' ? '*' : origin);
    reply.header('access-control-expose-headers', EXPOSED_HEADERS);
    reply.header('access-control-allow-methods', CORS_METHODS);
    if (!isPreflight) {
      reply.header('access-control-allow-headers', DEFAULT_HEADERS);
      return done();
    }
    reply.header('vary', 'Origin, Access-Control-Request-Headers');
    const asked = request.headers['access-control-request-headers'];
    if (asked !== undefined) reply.header('access-control-allow-headers', asked);
    reply.header('access-control-max-age', PREFLIGHT_MAX_AGE_SECONDS);
    // Answered here, before any route or credential check (browsers send no credentials with it).
    reply.code(204).header('content-length', '0').send();
  });
}
