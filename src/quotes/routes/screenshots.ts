// /1/projects/:project_id/screenshots: OneSky's upload (JSON or a form), and, beyond OneSky, the list
// of a project's screenshots with their tags and each one's image.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { DecodedScreenshot } from '../jobs/screenshot-reader.js';
import * as S from '../schemas.js';
import {
  listScreenshots,
  readScreenshotsBody,
  requireScreenshotImage,
  saveScreenshots,
  type RawScreenshotsBody,
} from '../files/screenshots.js';
import { projectOf, security, type QuotesDeps } from './context.js';

export function registerScreenshotRoutes(scope: FastifyInstance, { db, config, pool }: QuotesDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['screenshots'];

  // The upload in a scope of its own whose parsers keep the body's bytes: they are parsed, checked
  // and decoded in the file pool (10 MB of base64 took the request thread 50–200 ms).
  void scope.register(async (raw) => {
    raw.removeAllContentTypeParsers();
    for (const type of ['json', 'form'] as const) {
      const contentType = type === 'json' ? 'application/json' : 'application/x-www-form-urlencoded';
      raw.addContentTypeParser(contentType, { parseAs: 'buffer' }, (_request, bytes, done) => {
        done(null, { type, bytes: bytes as Buffer } satisfies RawScreenshotsBody);
      });
    }
    raw.withTypeProvider<TypeBoxTypeProvider>().post(
      '/1/projects/:project_id/screenshots',
      {
        bodyLimit: config.maxScreenshotBytes,
        // The body becomes its screenshots (and the credentials it carries) before authentication.
        preValidation: async (request) => {
          const body = request.body as RawScreenshotsBody | undefined;
          request.body = await readScreenshotsBody(pool, body, config.maxScreenshotBytes);
        },
        schema: {
          summary: 'Upload screenshots with the strings tagged on them',
          description:
            'JSON, or a form as PHP and the request library write nested fields ' +
            '(screenshots[0][name]=…&screenshots[0][tags][0][key]=…). A screenshot sent again under its name ' +
            'replaces the image and the tags. The body may be up to QUOTES_MAX_SCREENSHOT_BYTES ' +
            `(${config.maxScreenshotBytes} bytes here).`,
          tags,
          security,
          params: S.ProjectParams,
          querystring: S.AuthOnlyQuery,
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: S.ScreenshotsBody },
              'application/x-www-form-urlencoded': { schema: S.ScreenshotsBody },
            },
          },
          response: S.envelope(201, Type.Array(S.Screenshot), { 413: 'Body or image too large' }),
        },
      },
      async (request, reply) => {
        const project = await projectOf(db, request);
        const { screenshots } = request.body as { screenshots: DecodedScreenshot[] };
        const data = await saveScreenshots(db, project, screenshots);
        return reply.code(201).send({ meta: { status: 201, record_count: data.length }, data });
      },
    );
  });

  app.get(
    '/1/projects/:project_id/screenshots',
    {
      schema: {
        summary: 'Screenshots of a project by name, with their tags (not in OneSky)',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.ScreenshotsQuery,
        response: S.envelope(200, Type.Array(S.Screenshot)),
      },
    },
    async (request) => {
      const { page = 1, per_page: perPage = 50 } = request.query;
      return listScreenshots(db.kysely, await projectOf(db, request), page, perPage);
    },
  );

  app.get(
    '/1/projects/:project_id/screenshots/:screenshot_id/image',
    {
      schema: {
        summary: 'The image of a screenshot, as uploaded (not in OneSky)',
        tags,
        security,
        params: S.ScreenshotParams,
        querystring: S.AuthOnlyQuery,
        response: {
          200: {
            description: 'PNG, JPEG, GIF, WebP, BMP or TIFF',
            content: { 'image/*': { schema: { type: 'string', format: 'binary' } } },
          },
        },
      },
    },
    async (request, reply) => {
      const project = await projectOf(db, request);
      const image = await requireScreenshotImage(db.kysely, project, request.params.screenshot_id);
      // The type was recognized from the bytes; nosniff and a sandbox keep a browser from reading more into them.
      return reply
        .type(image.mime)
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .send(Buffer.from(image.image));
    },
  );
}
