// Reads (GET, HEAD, OPTIONS) of paths without a price: streamed both ways to the upstream, no
// charge, a valid key required (docs/proxy-billing.md).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../../http/errors.js';
import type { ForwardDeps } from './forward-deps.js';
import { routeOf } from './upstreams.js';
import { type CallerConnection, callerResponseHeaders, hasRequestBody, upstreamRequestHeaders } from './forward.js';

/** The methods forwarded free; every other one is a write (write-forward.ts). */
export const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export async function forwardFree(
  deps: ForwardDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  pathAndQuery: string,
  caller: CallerConnection,
) {
  if (request.headers.authorization === undefined && typeof request.headers['x-cashu'] === 'string') {
    throw new HttpError(
      401,
      'This path is free but needs an API key: send Authorization: Bearer sk-… (X-Cashu pays for billed paths only)',
      { code: 'invalid_authorization' },
    );
  }
  await deps.authenticator.accountId(request.headers.authorization);
  const raw = request.raw;
  const response = await deps.upstream.request({
    method: request.method,
    pathAndQuery,
    route: routeOf(request, pathAndQuery),
    headers: upstreamRequestHeaders(raw.headers),
    body: hasRequestBody(raw) ? raw : null,
    signal: caller.signal,
  });
  return reply.code(response.statusCode).headers(callerResponseHeaders(response.headers)).send(response.body);
}
