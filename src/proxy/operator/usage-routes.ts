// Usage analytics at Routstr's paths (/admin/api/usage/…, same query parameters and answer shapes,
// with quartet's figures added beside them) and quartet's breakdown by model, provider or key
// (docs/proxy-operator.md, "Usage analytics"). The figures come from ../usage/usage.ts.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { MAX_HOURS, type UsageAnalytics } from '../usage/usage.js';

const Hours = Type.Integer({ minimum: 1, maximum: MAX_HOURS, default: 24, description: 'Hours of history' });
const Interval = Type.Integer({ minimum: 1, maximum: 1440, default: 15, description: 'Bucket size in minutes' });

export function usageRoutes(usage: UsageAnalytics) {
  return async (scope: FastifyInstance) => {
    const app = scope.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/admin/api/usage/metrics',
      {
        schema: {
          summary: 'Requests, tokens, revenue, errors and latency per time bucket',
          querystring: Type.Object({ interval: Interval, hours: Hours }),
        },
      },
      async (request) => usage.metrics(request.query.interval, request.query.hours),
    );

    app.get(
      '/admin/api/usage/dashboard',
      {
        schema: {
          summary: 'Metrics, summary, error details, revenue by model and the model mix in one answer',
          querystring: Type.Object({
            interval: Interval,
            hours: Hours,
            error_limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
            model_limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
          }),
        },
      },
      async (request) => {
        const { interval, hours, error_limit, model_limit } = request.query;
        return usage.dashboard(interval, hours, error_limit, model_limit);
      },
    );

    app.get(
      '/admin/api/usage/summary',
      { schema: { summary: 'Totals of a period', querystring: Type.Object({ hours: Hours }) } },
      async (request) => usage.summary(request.query.hours),
    );

    app.get(
      '/admin/api/usage/error-details',
      {
        schema: {
          summary: 'The latest failed billed requests, newest first',
          querystring: Type.Object({ hours: Hours, limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }) }),
        },
      },
      async (request) => usage.errorDetails(request.query.hours, request.query.limit),
    );

    app.get(
      '/admin/api/usage/revenue-by-model',
      {
        schema: {
          summary: 'Revenue per model, largest first',
          querystring: Type.Object({ hours: Hours, limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }) }),
        },
      },
      async (request) => usage.revenueByModel(request.query.hours, request.query.limit),
    );

    app.get(
      '/admin/api/usage/breakdown',
      {
        schema: {
          summary: 'Requests, tokens, charges, errors and latency percentiles per model, provider or key',
          querystring: Type.Object({
            by: Type.Union([Type.Literal('model'), Type.Literal('provider'), Type.Literal('key')], {
              default: 'model',
            }),
            hours: Hours,
            limit: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
          }),
        },
      },
      async (request) => usage.breakdown(request.query.by, request.query.hours, request.query.limit),
    );
  };
}
