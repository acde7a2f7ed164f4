// Unbilled paths: streamed both ways to the upstream, no charge, a valid key required
// (docs/proxy-billing.md).
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../http/errors.js';
import type { ForwardDeps } from './billed-exchange.js';
import { type CallerConnection, callerResponseHeaders, upstreamRequestHeaders } from './forward.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export async function forwardFree(
  deps: ForwardDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  pathAndQuery: string,
  caller: CallerConnection,
) {
  const { config } = deps;
  if (!SAFE_METHODS.has(request.method) && !config.forwardUnbilledWrites) {
    throw new HttpError(
      403,
      `${request.method} ${pathAndQuery.split('?')[0]} is not a billed path, and this node forwards only GET, ` +
        'HEAD and OPTIONS on unbilled paths (PROXY_FORWARD_UNBILLED_WRITES)',
      { code: 'not_forwarded' },
    );
  }
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
    headers: upstreamRequestHeaders(raw.headers, config),
    body: hasBody(raw) ? raw : null,
    signal: caller.signal,
  });
  return reply.code(response.statusCode).headers(callerResponseHeaders(response.headers)).send(response.body);
}

function hasBody(raw: IncomingMessage): boolean {
  return (
    raw.headers['transfer-encoding'] !== undefined ||
    (raw.headers['content-length'] !== undefined && raw.headers['content-length'] !== '0')
  );
}
