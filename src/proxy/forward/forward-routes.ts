// The catch-all that forwards every unclaimed path upstream (docs/proxy-billing.md). Billed paths
// (model-using POSTs, see ../billing/metering.ts) go through billed-forward.ts; other writes are charged a flat
// price (write-forward.ts); reads are forwarded as a stream, free, to a valid key (free-forward.ts).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { HttpError } from '../../http/errors.js';
import { isUnderPrefix, LOCAL_PREFIXES } from '../../services.js';
import type { ForwardDeps } from './forward-deps.js';
import { forwardBilled } from './billed-forward.js';
import { CallerConnection } from './forward.js';
import { forwardFree, READ_METHODS } from './free-forward.js';
import { billedKind, normalizePath } from '../billing/metering.js';
import { ForwardSchema } from '../common/schemas.js';
import { forwardWrite } from './write-forward.js';

const FORWARD_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH'] as const;
/**
 * Paths that never go upstream: the platform's local prefixes and this node's own namespaces.
 * The router matched the catch-all on the raw URL, so check again after dot segments resolve.
 */
const NEVER_FORWARDED = [...LOCAL_PREFIXES, '/admin', '/v1/wallet'];

export async function registerForwardRoutes(app: FastifyInstance, deps: ForwardDeps) {
  await app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    // Bodies are not parsed here: they stream upstream as they come (billed ones are read whole).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    scope.route({
      method: [...FORWARD_METHODS],
      url: '/*',
      exposeHeadRoute: false,
      schema: ForwardSchema,
      handler: async (request, reply) => {
        const { path, search } = normalizePath(request.url);
        if (isUnderPrefix(path, NEVER_FORWARDED)) {
          throw new HttpError(404, `No route ${request.method} ${path}`, { code: 'not_found' });
        }
        const kind = billedKind(request.method, path);
        const caller = new CallerConnection(reply.raw);
        const pathAndQuery = path + search;
        if (kind) return forwardBilled(deps, { request, reply, caller, path, pathAndQuery, kind });
        if (READ_METHODS.has(request.method)) return forwardFree(deps, request, reply, pathAndQuery, caller);
        return forwardWrite(deps, { request, reply, caller, path, pathAndQuery });
      },
    });
  });
}
