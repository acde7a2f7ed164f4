// GET /admin/api/provider-health (a quartet addition, for the admin page): each upstream provider's
// circuit breaker as this process sees it, and the billed requests of the last hour: how many
// failed and how long they took. proxy_requests does not name the provider that served a request,
// so the request figures are the node's, over every provider.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { ProviderBreakerState } from '../forward/upstreams.js';
import type { OperatorDeps } from './operator-api.js';
import { requestHealthSince, requestLatencyAtRank } from './store.js';

const WINDOW_MS = 60 * 60_000;

/** What the route reads of the providers (../forward/upstreams.ts's Upstreams). */
export interface BreakerSource {
  breakerStates(): ProviderBreakerState[];
}

const NullableInt = Type.Union([Type.Integer(), Type.Null()]);

const ProviderHealth = Type.Object({
  providers: Type.Array(
    Type.Object({
      name: Type.String(),
      base_url: Type.String(),
      breaker: Type.Union([Type.Literal('closed'), Type.Literal('open'), Type.Literal('half-open')]),
      retry_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    }),
  ),
  window_seconds: Type.Integer(),
  requests: Type.Integer(),
  failed: Type.Integer(),
  upstream_errors: Type.Integer(),
  error_rate: Type.Number({ description: 'failed / requests that ended (0 with none)' }),
  latency_ms: Type.Object({ mean: NullableInt, p50: NullableInt, p95: NullableInt, max: NullableInt }),
});

export function healthRoutes(deps: OperatorDeps, breakers: BreakerSource) {
  const { db } = deps;
  return async (scope: FastifyInstance) => {
    const app = scope.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/admin/api/provider-health',
      {
        schema: {
          summary: "The providers' circuit breakers and the last hour's error rate and latency",
          response: { 200: ProviderHealth },
        },
      },
      async () => {
        const since = Date.now() - WINDOW_MS;
        const totals = await requestHealthSince(db.kysely, since);
        const ended = Number(totals.ended);
        const percentile = async (p: number) =>
          ended === 0 ? null : requestLatencyAtRank(db.kysely, since, Math.floor(p * (ended - 1)));
        const [p50, p95] = await Promise.all([percentile(0.5), percentile(0.95)]);
        const failed = Number(totals.failed);
        return {
          providers: breakers.breakerStates().map((p) => ({
            name: p.name,
            base_url: p.baseUrl,
            breaker: p.state,
            retry_at: p.retryAt > 0 ? new Date(p.retryAt).toISOString() : null,
          })),
          window_seconds: WINDOW_MS / 1000,
          requests: Number(totals.requests),
          failed,
          upstream_errors: Number(totals.upstream_errors),
          error_rate: ended === 0 ? 0 : failed / ended,
          latency_ms: {
            mean: totals.mean_latency_ms === null ? null : Number(totals.mean_latency_ms),
            p50,
            p95,
            max: totals.max_latency_ms === null ? null : Number(totals.max_latency_ms),
          },
        };
      },
    );
  };
}
