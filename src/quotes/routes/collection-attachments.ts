// /1/projects/:project_id/phrase-collection-attachments: files attached to phrase collections
// (OneSky's resources/phrase_collection_attachment.md: list, upload, download, delete).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { HttpError } from '../../http/errors.js';
import { mergeParameters } from '../common/params.js';
import {
  downloadAttachment,
  listAttachments,
  removeAttachment,
  uploadAttachment,
} from '../files/collection-attachments.js';
import * as S from '../schemas.js';
import { projectOf, security, type QuotesDeps } from './context.js';

export function registerAttachmentRoutes(scope: FastifyInstance, { db, config }: QuotesDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['phrase collections'];
  const url = '/1/projects/:project_id/phrase-collection-attachments';

  app.get(
    url,
    {
      schema: {
        summary: "Files attached to the project's phrase collections, paged",
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.AttachmentsQuery,
        response: S.envelope(200, Type.Array(S.AttachmentItem)),
      },
    },
    async (request) => {
      const { page = 1, per_page: perPage = 50 } = request.query;
      return listAttachments(db.kysely, await projectOf(db, request), page, perPage);
    },
  );

  app.post(
    url,
    {
      schema: {
        summary: 'Attach a file (multipart) to a phrase collection; a name sent again replaces the file',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.AuthOnlyQuery,
        consumes: ['multipart/form-data'],
        requestBody: S.AttachmentUploadBody,
        response: S.envelope(201, S.Attachment, { 413: 'Larger than QUOTES_MAX_FILE_BYTES', 415: 'Not multipart' }),
      },
    },
    async (request, reply) => {
      const project = await projectOf(db, request);
      if (!request.isMultipart()) throw new HttpError(415, 'Upload the file as multipart/form-data with a "file" part');
      const data = await uploadAttachment(db, config.maxFileBytes, project, request.body, request.query);
      return reply.code(201).send({ meta: { status: 201 }, data });
    },
  );

  app.get(
    `${url}/download`,
    {
      schema: {
        summary: 'An attachment, as uploaded',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.AttachmentQuery,
        response: {
          200: {
            description: 'the file as uploaded',
            content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
          },
        },
      },
    },
    async (request, reply) => {
      const project = await projectOf(db, request);
      const { collection_key: key, name } = request.query;
      const file = await downloadAttachment(db.kysely, project, key, name);
      // Bytes of unknown kind: a download, never rendered (nosniff, a sandbox).
      return reply
        .type('application/octet-stream')
        .header('content-disposition', `attachment; filename="${file.name}"`)
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .send(file.content);
    },
  );

  app.delete(
    url,
    {
      // collection_key and name in the query string, or in a JSON or form body.
      preValidation: mergeParameters([], [], 'query'),
      schema: {
        summary: 'Delete an attachment of a phrase collection',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.AttachmentQuery,
        response: S.envelope(
          200,
          Type.Object({ name: Type.String(), collection_attached_to: Type.Object({ key: Type.String() }) }),
        ),
      },
    },
    async (request) => {
      const { collection_key: key, name } = request.query;
      return {
        meta: { status: 200 },
        data: await removeAttachment(db.kysely, await projectOf(db, request), key, name),
      };
    },
  );
}
