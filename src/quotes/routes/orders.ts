// /1/projects/:project_id/quotations and orders: a price and completion estimate, and accepting it.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { createOrder, listOrders, orderWithTasks, showOrder } from '../quotation/orders.js';
import { mergeOrderParameters, normalizeQuotationQuery } from '../common/params.js';
import { makeQuotation, quotationBody, quoteRequestOf } from '../quotation/quote.js';
import * as S from '../schemas.js';
import { principalOf, projectOf, security, type QuotesDeps } from './context.js';

export function registerOrderRoutes(scope: FastifyInstance, { db, config }: QuotesDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/1/projects/:project_id/quotations',
    {
      preValidation: normalizeQuotationQuery,
      schema: {
        summary: 'A quotation: strings, words, cost and completion time for three service levels',
        tags: ['quotations'],
        security,
        params: S.ProjectParams,
        querystring: S.QuotationQuery,
        response: S.envelope(200, S.Quotation),
      },
    },
    async (request) => {
      const project = await projectOf(db, request);
      const quoteRequest = quoteRequestOf(project, request.query);
      const quotation = await makeQuotation(db.kysely, config, project, quoteRequest, Date.now());
      return { meta: { status: 200 }, data: quotationBody(quotation, quoteRequest) };
    },
  );

  app.post(
    '/1/projects/:project_id/orders',
    {
      preValidation: mergeOrderParameters,
      schema: {
        summary: 'Order a translation; fixes the "outdated" baseline of the ordered files',
        tags: ['orders'],
        security,
        params: S.ProjectParams,
        body: S.OrderBody,
        response: S.envelope(201, S.Order, { 409: 'Nothing to order' }),
      },
    },
    async (request, reply) => {
      const project = await projectOf(db, request);
      const { body } = request;
      const order = await createOrder(db, config, project, principalOf(request), quoteRequestOf(project, body), {
        orderType: body.order_type ?? 'translate-only',
        translatorType: body.translator_type ?? 'fastest',
        tone: body.tone ?? 'not-specified',
        note: body.note ?? '',
      });
      return reply.code(201).send({ meta: { status: 201 }, data: await orderWithTasks(db.kysely, order) });
    },
  );

  app.get(
    '/1/projects/:project_id/orders',
    {
      schema: {
        summary: 'Orders of a project, newest first, paged',
        tags: ['orders'],
        security,
        params: S.ProjectParams,
        querystring: S.OrdersQuery,
        response: S.envelope(200, Type.Array(S.Order)),
      },
    },
    async (request) => {
      const { page = 1, per_page: perPage = 50, file_name: fileName } = request.query;
      return listOrders(db, await projectOf(db, request), page, perPage, fileName);
    },
  );

  app.get(
    '/1/projects/:project_id/orders/:order_id',
    {
      schema: {
        summary: 'One order with its tasks',
        tags: ['orders'],
        security,
        params: S.OrderParams,
        querystring: S.AuthOnlyQuery,
        response: S.envelope(200, S.Order),
      },
    },
    async (request) => {
      const order = await showOrder(db.kysely, await projectOf(db, request), request.params.order_id);
      return { meta: { status: 200 }, data: order };
    },
  );
}
