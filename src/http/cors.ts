// Cross-origin headers as the seed's area D part requires: Allow-Origin, -Methods and -Headers
// on every answer to an allowed origin, and every header the viewer sends (Content-Type,
// Authorization, custom api-key headers…) allowed by echoing the preflight's request.
import type { FastifyInstance } from 'fastify';
import { errorStyleFor, HttpError, sendError } from './errors.js';

export const CORS_METHODS = 'GET, PUT, POST, DELETE, PATCH, OPTIONS, HEAD';
const DEFAULT_HEADERS = 'Content-Type, Authorization, X-Cashu, X-Request-Id, api_key, X-API-Key';
const EXPOSED_HEADERS = '*, X-Request-Id, X-Cashu, Retry-After, Content-Disposition';
const MAX_REQUESTED_HEADERS = 4096;

export function registerCors(app: FastifyInstance, allowed: '*' | string[]) {
  const allows = (origin: string) => allowed === '*' || allowed.includes(origin);

  // Callback style (no promise per request); an answer sent here ends the request without done().
  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin;
    if (!origin) return done();
    const isPreflight =
      request.method === 'OPTIONS' && typeof request.headers['access-control-request-method'] === 'string';
    if (!allows(origin)) {
      if (!isPreflight) return done();
      // In the shape of the path's area, as every error answer (errors.ts).
      return void sendError(reply, errorStyleFor(request.url), new HttpError(403, 'Origin not allowed'));
    }
    const requested = request.headers['access-control-request-headers'];
    const allowHeaders =
      typeof requested === 'string' &&
      requested.length <= MAX_REQUESTED_HEADERS &&
      /^[\w\-, ]*$/.test(requested) &&
      requested.trim()
        ? `${DEFAULT_HEADERS}, ${requested}`
        : DEFAULT_HEADERS;
    reply.header('Access-Control-Allow-Origin', allowed === '*' ? '*' : origin);
    reply.header('Access-Control-Allow-Methods', CORS_METHODS);
    reply.header('Access-Control-Allow-Headers', allowHeaders);
    reply.header('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    if (allowed !== '*') reply.header('Vary', 'Origin');
    if (isPreflight) {
      reply.header('Access-Control-Max-Age', '600');
      return void reply.code(204).send();
    }
    done();
  });
}
