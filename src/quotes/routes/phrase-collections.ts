// /1/projects/:project_id/phrase-collections: OneSky's phrase collections (list, show, import, delete).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { mergeParameters } from '../common/params.js';
import { deleteCollection, importCollections, listCollections, showCollection } from '../files/phrase-collections.js';
import * as S from '../schemas.js';
import { projectOf, security, type QuotesDeps } from './context.js';

export function registerPhraseCollectionRoutes(scope: FastifyInstance, { db, queue, pool }: QuotesDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['phrase collections'];
  const url = '/1/projects/:project_id/phrase-collections';

  app.get(
    url,
    {
      schema: {
        summary: 'Phrase collections of a project by key, paged',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.CollectionsQuery,
        response: S.envelope(200, Type.Array(S.CollectionItem)),
      },
    },
    async (request) => {
      const { page = 1, per_page: perPage = 50 } = request.query;
      return listCollections(db.kysely, await projectOf(db, request), page, perPage);
    },
  );

  app.get(
    `${url}/show`,
    {
      schema: {
        summary: 'A phrase collection: its strings in the base language and their translations',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.CollectionKeyQuery,
        response: S.envelope(200, S.PhraseCollection),
      },
    },
    async (request) => {
      const project = await projectOf(db, request);
      return { meta: { status: 200 }, data: await showCollection(db.kysely, project, request.query.collection_key) };
    },
  );

  app.post(
    url,
    {
      // Parameters in the query string, a JSON body or a form (collections then as JSON text).
      preValidation: mergeParameters([], ['is_keeping_all_strings']),
      schema: {
        summary: 'Create or edit phrase collections; each is imported in the background',
        description:
          'Answers 201 with the import of the first collection (and `imports`, one per collection); poll ' +
          'GET /1/projects/{project_id}/import-tasks/{import_id}. A collection is stored as a file of format ' +
          'PHRASE_COLLECTION named by its key: quotations, orders, translation status and exports take its key ' +
          'as a file name.',
        tags,
        security,
        params: S.ProjectParams,
        body: S.CollectionsImportBody,
        response: S.envelope(201, S.CollectionsImported),
      },
      onRequest: async () => pool.warm(),
    },
    async (request, reply) => {
      const data = await importCollections(db, queue, await projectOf(db, request), request.body);
      return reply.code(201).send({ meta: { status: 201 }, data });
    },
  );

  app.delete(
    url,
    {
      // collection_key in the query string, or in a JSON or form body.
      preValidation: mergeParameters([], [], 'query'),
      schema: {
        summary: 'Delete a phrase collection with its strings and translations',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.CollectionKeyQuery,
        response: S.envelope(200, Type.Object({ key: Type.String() })),
      },
    },
    async (request) => {
      const key = request.query.collection_key;
      await deleteCollection(db.kysely, await projectOf(db, request), key);
      return { meta: { status: 200 }, data: { key } };
    },
  );
}
