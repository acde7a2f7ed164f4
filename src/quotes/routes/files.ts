// /1/projects/:project_id/files and import-tasks: uploads, their imports and the file list.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { HttpError } from '../../http/errors.js';
import { importTask, listFiles, listImportTasks, removeFile, uploadFile } from '../files/files.js';
import { mergeParameters } from '../common/params.js';
import * as S from '../schemas.js';
import { projectOf, security, type QuotesDeps } from './context.js';

export function registerFileRoutes(scope: FastifyInstance, { db, config, queue, pool }: QuotesDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['files'];

  app.post(
    '/1/projects/:project_id/files',
    {
      schema: {
        summary: 'Upload a file (multipart); the import runs in the background',
        description:
          'Answers 201 with the import id; poll GET /1/projects/{project_id}/import-tasks/{import_id}. ' +
          'A file name sent with a path is saved under its base name; one with a ".." segment or control ' +
          'characters is a 400. Broken files, wrong formats or encodings and oversize files end as a failed ' +
          'import with a message.',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.AuthOnlyQuery,
        consumes: ['multipart/form-data'],
        requestBody: S.UploadRequestBody,
        response: S.envelope(201, S.UploadResult, { 415: 'Not multipart/form-data' }),
      },
      // Before the body is read: the import thread starts while the file arrives.
      onRequest: async () => pool.warm(),
    },
    async (request, reply) => {
      const project = await projectOf(db, request);
      if (!request.isMultipart()) throw new HttpError(415, 'Upload the file as multipart/form-data with a "file" part');
      const data = await uploadFile(db, queue, config.maxFileBytes, project, request.body, request.query);
      return reply.code(201).send({ meta: { status: 201 }, data });
    },
  );

  // The PHP client asks for the list with a trailing slash: the same route, described once.
  for (const [url, hide] of [
    ['/1/projects/:project_id/import-tasks', false],
    ['/1/projects/:project_id/import-tasks/', true],
  ] as const) {
    app.get(
      url,
      {
        schema: {
          hide,
          summary: 'Imports of a project, newest first, paged; status filters them',
          tags,
          security,
          params: S.ProjectParams,
          querystring: S.ImportTasksQuery,
          response: S.envelope(200, Type.Array(S.ImportTaskItem)),
        },
      },
      async (request) => {
        const { page = 1, per_page: perPage = 50, status = 'all' } = request.query;
        return listImportTasks(db.kysely, await projectOf(db, request), status, page, perPage);
      },
    );
  }

  app.get(
    '/1/projects/:project_id/import-tasks/:import_id',
    {
      schema: {
        summary: 'Status of an import: in-progress, completed or failed (with a message)',
        tags,
        security,
        params: S.ImportParams,
        querystring: S.AuthOnlyQuery,
        response: S.envelope(200, S.ImportTask),
      },
    },
    async (request) => {
      const project = await projectOf(db, request);
      return { meta: { status: 200 }, data: await importTask(db.kysely, project, request.params.import_id) };
    },
  );

  app.get(
    '/1/projects/:project_id/files',
    {
      schema: {
        summary: 'Uploaded files, paged',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.FilesQuery,
        response: S.envelope(200, Type.Array(S.FileItem)),
      },
    },
    async (request) => {
      const { page = 1, per_page: perPage = 50 } = request.query;
      return listFiles(db.kysely, await projectOf(db, request), page, perPage);
    },
  );

  app.delete(
    '/1/projects/:project_id/files',
    {
      // file_name in the query string, or in a JSON body as the PHP client sends it.
      preValidation: mergeParameters([], [], 'query'),
      schema: {
        summary: 'Delete a file with its strings and translations',
        description: 'file_name may also come in a JSON or form body (as the PHP client sends it).',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.DeleteFileQuery,
        response: S.envelope(200, Type.Object({ name: Type.String() })),
      },
    },
    async (request) => {
      const name = request.query.file_name;
      await removeFile(db.kysely, await projectOf(db, request), name);
      return { meta: { status: 200 }, data: { name } };
    },
  );
}
