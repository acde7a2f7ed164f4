// /1/projects/:project_id/translations: exports (one language, all languages in one file, app store
// descriptions) and a file's translation status.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { exportAppDescription, exportFile, exportMultilingual, type ExportedFile } from '../jobs/exporter.js';
import { translationStatus } from '../files/files.js';
import { requireLanguage } from '../common/locales.js';
import * as S from '../schemas.js';
import { projectOf, security, type QuotesDeps } from './context.js';

/** A file as a download. */
function sendFile(reply: FastifyReply, file: ExportedFile) {
  return reply.type(file.mime).header('content-disposition', `attachment; filename="${file.name}"`).send(file.content);
}

export function registerTranslationRoutes(scope: FastifyInstance, { db, pool }: QuotesDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['translations'];

  app.get(
    '/1/projects/:project_id/translations',
    {
      schema: {
        summary: 'Export a file with its translations in one language',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.TranslationsQuery,
        response: S.ExportedFile,
      },
    },
    async (request, reply) => {
      const project = await projectOf(db, request);
      const { locale, source_file_name: sourceName, export_file_name: exportName } = request.query;
      const language = requireLanguage('locale', locale);
      return sendFile(reply, await exportFile(db, pool, project, language, sourceName, exportName));
    },
  );

  app.get(
    '/1/projects/:project_id/translations/multilingual',
    {
      schema: {
        summary: 'Export a file in every language of the project at once (I18NEXT_MULTILINGUAL_JSON)',
        description:
          'The base language gives the source texts, each target language its translations; untranslated ' +
          'strings are left out. Language keys are the codes of GET /1/locales.',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.MultilingualQuery,
        response: S.MultilingualFile,
      },
    },
    async (request, reply) => {
      const project = await projectOf(db, request);
      const { source_file_name: sourceName, export_file_name: exportName } = request.query;
      return sendFile(reply, await exportMultilingual(db, pool, project, sourceName, exportName));
    },
  );

  app.get(
    '/1/projects/:project_id/translations/app-descriptions',
    {
      schema: {
        summary: 'The app store description of a project of a …-metadata type, in one language',
        description:
          "data is the tree of the strings of the project's files (APP_NAME, DESCRIPTION, APP_KEYWORD: {…} as " +
          'uploaded, e.g. in a HIERARCHICAL_JSON file) in the language; untranslated strings are left out.',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.AppDescriptionQuery,
        response: S.envelope(200, Type.Record(Type.String(), Type.Unknown())),
      },
    },
    async (request, reply) => {
      const project = await projectOf(db, request);
      const language = requireLanguage('locale', request.query.locale);
      const tree = await exportAppDescription(db, pool, project, language);
      // The writer's JSON goes into the answer as it is: no parse and serialization on this thread.
      const meta = JSON.stringify({ status: 200, language });
      return reply
        .type('application/json; charset=utf-8')
        .send(Buffer.concat([Buffer.from(`{"meta":${meta},"data":`), tree, Buffer.from('}')]));
    },
  );

  app.get(
    '/1/projects/:project_id/translations/status',
    {
      schema: {
        summary: "How far a file's translation into one language is",
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.TranslationStatusQuery,
        response: S.envelope(200, S.TranslationStatus),
      },
    },
    async (request) => {
      const project = await projectOf(db, request);
      const language = requireLanguage('locale', request.query.locale);
      return {
        meta: { status: 200 },
        data: await translationStatus(db.kysely, project, request.query.file_name, language),
      };
    },
  );
}
