// The /1 routes of the quotation service (OneSky Platform API conventions).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import { HttpError } from '../http/errors.js';
import { readMultipartBody } from '../http/multipart.js';
import type { Principal } from '../http/auth.js';
import type { ServiceContext } from '../services.js';
import { makeAuthenticator } from './auth.js';
import { exportFile } from './exporter.js';
import type { FilePool } from './file-worker.js';
import { isFileFormat, FILE_FORMATS } from './formats/index.js';
import { fileNameProblem } from './importer.js';
import type { ImportQueue } from './jobs.js';
import { findLanguage, LANGUAGES, requireLanguage, type Language } from './locales.js';
import { normalizeQuery, readBoolean, readList } from './params.js';
import { makeQuotation, quotationBody, type QuoteRequest } from './quote.js';
import * as S from './schemas.js';
import { createOrder, orderBody, type OrderLevel } from './orders.js';
import {
  addTargetLocales,
  findFile,
  findImport,
  findProject,
  listProjects,
  setTargetLocales,
  targetLocales,
  type Project,
} from './store.js';
import { timeFields } from './time.js';
import type { Specialization } from './rates.js';

const QUOTE_BOOLEANS = ['is_including_not_translated', 'is_including_not_approved', 'is_including_outdated'];
const security: Record<string, string[]>[] = [{ oneSkyKey: [], oneSkyTimestamp: [], oneSkyHash: [] }, { bearer: [] }];

export async function registerQuoteRoutes(
  app: FastifyInstance,
  context: ServiceContext,
  queue: ImportQueue,
  pool: FilePool,
) {
  const { db, config } = context;
  const quotes = config.quotes;
  const kysely = db.kysely;
  const uploadLimits = { fileSize: quotes.maxFileBytes, files: 1, fields: 20, fieldSize: 4096, parts: 25 };
  await app.register(multipart, {
    throwFileSizeLimit: false,
    // Keep "../x.po" as sent (busboy would strip it): a path in a file name fails the import.
    preservePath: true,
    limits: uploadLimits,
  } as Parameters<typeof multipart>[1]);
  // The whole form is read before the handler (as attachFieldsToBody would), so credentials sent
  // as parts are checked in preHandler; a malformed form is a 400/413 here, not a 500.
  app.addHook('preValidation', async (request) => {
    if (request.isMultipart()) request.body = await readMultipartBody(request, uploadLimits);
  });
  const authenticate = makeAuthenticator(context.identity, quotes.timestampWindowS);
  // Every route but /1/locales is signed. Credentials in the query string or a bearer header
  // are checked before the body is read (an upload is refused before it is buffered); those
  // sent in the body are checked once it is parsed.
  const isPublic = (request: FastifyRequest) =>
    (request.routeOptions.config as { public?: boolean } | undefined)?.public === true;
  app.addHook('onRequest', async (request) => {
    const query = (request.query ?? {}) as Record<string, unknown>;
    const inQuery = query.api_key !== undefined && query.timestamp !== undefined && query.dev_hash !== undefined;
    if (!isPublic(request) && (inQuery || request.headers.authorization)) {
      request.quotesPrincipal = await authenticate(request);
    }
  });
  app.addHook('preHandler', async (request) => {
    if (!isPublic(request) && !request.quotesPrincipal) request.quotesPrincipal = await authenticate(request);
  });
  const principalOf = (request: FastifyRequest): Principal => request.quotesPrincipal!;

  async function projectFor(request: FastifyRequest): Promise<Project> {
    const id = (request.params as { project_id: number }).project_id;
    const project = await findProject(kysely, id, principalOf(request));
    if (!project) throw new HttpError(404, `project ${id} not found`);
    return project;
  }

  async function projectBody(project: Project) {
    const [targets, totals] = await Promise.all([
      targetLocales(kysely, project.id),
      kysely
        .selectFrom('quote_files')
        .select([
          sql<number>`coalesce(sum(string_count), 0)`.as('strings'),
          sql<number>`coalesce(sum(word_count), 0)`.as('words'),
        ])
        .where('project_id', '=', project.id)
        .executeTakeFirst(),
    ]);
    return {
      id: project.id,
      name: project.name,
      description: project.description,
      base_language: findLanguage(project.base_locale)!,
      target_languages: targets.map((code) => findLanguage(code)!).filter(Boolean),
      string_count: Number(totals?.strings ?? 0),
      word_count: Number(totals?.words ?? 0),
      ...timeFields('created', project.created_at),
    };
  }

  function targetCodes(base: Language, inputs: string[] | undefined): string[] {
    const codes = new Set<string>();
    for (const input of inputs ?? []) {
      const language = requireLanguage('target_locales', input);
      if (language.code === base.code) {
        throw new HttpError(400, `target_locales: ${language.code} is the base language`);
      }
      codes.add(language.code);
    }
    return [...codes];
  }

  // ---- locales ------------------------------------------------------------------------
  app.get(
    '/1/locales',
    {
      config: { public: true },
      schema: {
        summary: 'Every supported locale (CLDR names)',
        description: 'Public: no credentials needed.',
        tags: ['locales'],
        response: S.envelope(200, Type.Array(S.Language)),
      },
    },
    async () => ({ meta: { status: 200, record_count: LANGUAGES.length }, data: LANGUAGES }),
  );

  // ---- projects -----------------------------------------------------------------------
  app.get(
    '/1/projects',
    {
      schema: {
        summary: 'Projects of the caller (all for an admin)',
        tags: ['projects'],
        security,
        querystring: Type.Object(S.AuthQuery),
        response: S.envelope(200, Type.Array(S.Project)),
      },
    },
    async (request) => {
      const projects = await listProjects(kysely, principalOf(request));
      const data = [];
      for (const project of projects) data.push(await projectBody(project));
      return { meta: { status: 200, record_count: data.length }, data };
    },
  );

  app.post(
    '/1/projects',
    {
      schema: {
        summary: 'Create a project',
        tags: ['projects'],
        security,
        body: S.CreateProjectBody,
        response: S.envelope(201, S.Project),
      },
    },
    async (request, reply) => {
      const body = request.body as {
        name: string;
        description?: string;
        base_locale?: string;
        target_locales?: string[];
      };
      const base = requireLanguage('base_locale', body.base_locale ?? 'en-US');
      const targets = targetCodes(base, body.target_locales);
      const now = Date.now();
      const project = await kysely.transaction().execute(async (trx) => {
        const row = await trx
          .insertInto('quote_projects')
          .values({
            owner_id: principalOf(request).userId,
            name: body.name,
            description: body.description ?? '',
            base_locale: base.code,
            created_at: now,
            updated_at: now,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        await addTargetLocales(trx, Number(row.id), targets, now);
        return (await findProject(trx, Number(row.id), principalOf(request)))!;
      });
      return reply.code(201).send({ meta: { status: 201 }, data: await projectBody(project) });
    },
  );

  app.get(
    '/1/projects/:project_id',
    {
      schema: {
        summary: 'Show a project',
        tags: ['projects'],
        security,
        params: S.ProjectParams,
        querystring: Type.Object(S.AuthQuery),
        response: S.envelope(200, S.Project),
      },
    },
    async (request) => ({ meta: { status: 200 }, data: await projectBody(await projectFor(request)) }),
  );

  app.put(
    '/1/projects/:project_id',
    {
      schema: {
        summary: 'Update a project',
        tags: ['projects'],
        security,
        params: S.ProjectParams,
        body: S.UpdateProjectBody,
        response: S.envelope(200, S.Project),
      },
    },
    async (request) => {
      const project = await projectFor(request);
      const body = request.body as {
        name?: string;
        description?: string;
        base_locale?: string;
        target_locales?: string[];
      };
      const now = Date.now();
      await kysely.transaction().execute(async (trx) => {
        let base = findLanguage(project.base_locale)!;
        if (body.base_locale !== undefined) {
          base = requireLanguage('base_locale', body.base_locale);
          if (base.code !== project.base_locale) {
            const files = await trx
              .selectFrom('quote_files')
              .select('id')
              .where('project_id', '=', project.id)
              .limit(1)
              .executeTakeFirst();
            if (files) {
              throw new HttpError(400, 'base_locale: cannot change the base language of a project that has files');
            }
          }
        }
        await trx
          .updateTable('quote_projects')
          .set({
            name: body.name ?? project.name,
            description: body.description ?? project.description,
            base_locale: base.code,
            updated_at: now,
          })
          .where('id', '=', project.id)
          .execute();
        if (body.target_locales !== undefined) {
          await setTargetLocales(trx, project.id, targetCodes(base, body.target_locales), now);
        }
      });
      const updated = await findProject(kysely, project.id, principalOf(request));
      if (!updated) throw new HttpError(404, `project ${project.id} not found`); // deleted meanwhile
      return { meta: { status: 200 }, data: await projectBody(updated) };
    },
  );

  app.delete(
    '/1/projects/:project_id',
    {
      schema: {
        summary: 'Delete a project with its files, translations and orders',
        tags: ['projects'],
        security,
        params: S.ProjectParams,
        querystring: Type.Object(S.AuthQuery),
        response: S.envelope(200, Type.Object({})),
      },
    },
    async (request) => {
      const project = await projectFor(request);
      await kysely.deleteFrom('quote_projects').where('id', '=', project.id).execute();
      return { meta: { status: 200 }, data: {} };
    },
  );

  app.get(
    '/1/projects/:project_id/languages',
    {
      schema: {
        summary: 'The languages of a project with translation progress',
        tags: ['projects'],
        security,
        params: S.ProjectParams,
        querystring: Type.Object(S.AuthQuery),
        response: S.envelope(200, Type.Array(S.ProjectLanguage)),
      },
    },
    async (request) => {
      const project = await projectFor(request);
      const targets = await targetLocales(kysely, project.id);
      const files = await kysely
        .selectFrom('quote_files')
        .select(['id', 'string_count', 'uploaded_at'])
        .where('project_id', '=', project.id)
        .execute();
      const total = files.reduce((sum, file) => sum + file.string_count, 0);
      const counts = files.length
        ? await kysely
            .selectFrom('quote_file_locales')
            .select([
              'locale',
              kysely.fn.sum<number>('approved_strings').as('approved'),
              kysely.fn.max('translated_at').as('latest'),
            ])
            .where(
              'file_id',
              'in',
              files.map((f) => f.id),
            )
            .groupBy('locale')
            .execute()
        : [];
      const lastUpload = files.reduce<number | null>(
        (max, f) => (max === null || f.uploaded_at > max ? Number(f.uploaded_at) : max),
        null,
      );
      const base = findLanguage(project.base_locale)!;
      const data = [
        {
          ...base,
          is_base_language: true,
          is_ready_to_publish: true,
          translation_progress: '100%',
          ...timeFields('last_updated', lastUpload),
        },
        ...targets.map((code) => {
          const row = counts.find((c) => c.locale === code);
          const approved = Number(row?.approved ?? 0);
          // Floor, so "100%" means every string is approved and current.
          const percent = total === 0 ? 0 : Math.floor((approved * 100) / total);
          return {
            ...findLanguage(code)!,
            is_base_language: false,
            is_ready_to_publish: total > 0 && approved === total,
            translation_progress: `${percent}%`,
            ...timeFields('last_updated', row?.latest == null ? null : Number(row.latest)),
          };
        }),
      ];
      return { meta: { status: 200, record_count: data.length }, data };
    },
  );

  // ---- files ---------------------------------------------------------------------------
  app.post(
    '/1/projects/:project_id/files',
    {
      schema: {
        summary: 'Upload a file (multipart); the import runs in the background',
        description:
          'Answers 201 with the import id; poll GET /1/projects/{project_id}/import-tasks/{import_id}. Broken files, wrong formats or encodings, oversize files and paths in file names end as a failed import with a message.',
        tags: ['files'],
        security,
        params: S.ProjectParams,
        querystring: Type.Object(S.AuthQuery),
        consumes: ['multipart/form-data'],
        requestBody: S.UploadRequestBody,
        response: S.envelope(201, S.UploadResult, { 415: 'Not multipart/form-data' }),
      },
    },
    async (request, reply) => {
      const project = await projectFor(request);
      if (!request.isMultipart()) throw new HttpError(415, 'Upload the file as multipart/form-data with a "file" part');
      const body = (request.body ?? {}) as Record<string, any>;
      const text = (name: string): string | undefined => {
        const part = body[name] ?? (request.query as Record<string, unknown>)[name];
        const value = part && typeof part === 'object' && Object.hasOwn(part, 'value') ? part.value : part;
        return typeof value === 'string' && value !== '' ? value : undefined;
      };
      const file = body.file;
      if (!file || typeof file !== 'object' || !Object.hasOwn(file, 'file')) {
        throw new HttpError(400, 'file: a "file" part is required');
      }
      const format = text('file_format');
      if (!format) throw new HttpError(400, 'file_format: required (one of ' + FILE_FORMATS.join(', ') + ')');
      if (!isFileFormat(format)) {
        throw new HttpError(
          400,
          `file_format: unknown format "${format.slice(0, 40)}" (one of ${FILE_FORMATS.join(', ')})`,
        );
      }
      const language = text('locale') ? requireLanguage('locale', text('locale')!) : findLanguage(project.base_locale)!;
      const keepAll = readBoolean('is_keeping_all_strings', text('is_keeping_all_strings'), true);
      const allowSame = readBoolean(
        'is_allow_translation_same_as_original',
        text('is_allow_translation_same_as_original'),
        false,
      );
      const fileName = String(file.filename ?? '');
      const bytes: Buffer = await file.toBuffer();
      // Problems with the file itself become a failed import task, as with any unreadable file.
      const problem = file.file?.truncated
        ? `the file is larger than the limit of ${quotes.maxFileBytes} bytes (QUOTES_MAX_FILE_BYTES)`
        : fileNameProblem(fileName);
      const now = Date.now();
      // The upload is kept, apart from its import row, until the import ends (any process may run it).
      const row = await kysely.transaction().execute(async (trx) => {
        const inserted = await trx
          .insertInto('quote_imports')
          .values({
            project_id: project.id,
            file_name: fileName.slice(0, 255),
            format,
            locale: language.code,
            keep_all_strings: keepAll ? 1 : 0,
            allow_same_as_original: allowSame ? 1 : 0,
            status: problem ? 'failed' : 'queued',
            message: problem,
            byte_count: bytes.length,
            string_count: null,
            word_count: null,
            attempts: 0,
            created_at: now,
            started_at: null,
            finished_at: problem ? now : null,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        if (!problem) {
          await trx
            .insertInto('quote_import_payloads')
            .values({ import_id: Number(inserted.id), payload: bytes })
            .execute();
        }
        return inserted;
      });
      if (!problem) queue.kick();
      return reply.code(201).send({
        meta: { status: 201 },
        data: { name: fileName, format, language, import: { id: Number(row.id), ...timeFields('created', now) } },
      });
    },
  );

  app.get(
    '/1/projects/:project_id/import-tasks/:import_id',
    {
      schema: {
        summary: 'Status of an import: in-progress, completed or failed (with a message)',
        tags: ['files'],
        security,
        params: S.ImportParams,
        querystring: Type.Object(S.AuthQuery),
        response: S.envelope(200, S.ImportTask),
      },
    },
    async (request) => {
      const project = await projectFor(request);
      const id = (request.params as { import_id: number }).import_id;
      const job = await findImport(kysely, project.id, id);
      if (!job) throw new HttpError(404, `import ${id} not found in project ${project.id}`);
      const status = job.status === 'completed' || job.status === 'failed' ? job.status : 'in-progress';
      return {
        meta: { status: 200 },
        data: {
          id: job.id,
          file: { name: job.file_name, format: job.format, locale: findLanguage(job.locale)! },
          string_count: job.string_count,
          word_count: job.word_count,
          status,
          message: job.message,
          ...timeFields('created', job.created_at),
          ...timeFields('completed', status === 'completed' ? job.finished_at : null),
        },
      };
    },
  );

  app.get(
    '/1/projects/:project_id/files',
    {
      schema: {
        summary: 'Uploaded files, paged',
        tags: ['files'],
        security,
        params: S.ProjectParams,
        querystring: Type.Object({ ...S.AuthQuery, ...S.PageQuery }),
        response: S.envelope(200, Type.Array(S.FileItem)),
      },
    },
    async (request) => {
      const project = await projectFor(request);
      const { page = 1, per_page: perPage = 50 } = request.query as { page?: number; per_page?: number };
      const count = await kysely
        .selectFrom('quote_files')
        .select(kysely.fn.countAll<number>().as('n'))
        .where('project_id', '=', project.id)
        .executeTakeFirstOrThrow();
      const total = Number(count.n);
      const rows = await kysely
        .selectFrom('quote_files as f')
        .leftJoin('quote_imports as i', 'i.id', 'f.last_import_id')
        .select([
          'f.name',
          'f.format',
          'f.string_count',
          'f.word_count',
          'f.uploaded_at',
          'f.last_import_id',
          'i.status',
        ])
        .where('f.project_id', '=', project.id)
        .orderBy('f.name')
        .limit(perPage)
        .offset((page - 1) * perPage)
        .execute();
      const pages = Math.ceil(total / perPage);
      const link = (n: number) => `/1/projects/${project.id}/files?page=${n}&per_page=${perPage}`;
      return {
        meta: {
          status: 200,
          record_count: total,
          page_count: pages,
          next_page: page < pages ? link(page + 1) : null,
          prev_page: page > 1 && page <= pages + 1 ? link(page - 1) : null,
        },
        data: rows.map((row) => ({
          name: row.name,
          file_format: row.format,
          string_count: row.string_count,
          word_count: row.word_count,
          last_import:
            row.last_import_id == null
              ? null
              : {
                  id: Number(row.last_import_id),
                  status: row.status === 'completed' || row.status === 'failed' ? row.status : 'in-progress',
                },
          ...timeFields('uploaded', row.uploaded_at),
        })),
      };
    },
  );

  app.delete(
    '/1/projects/:project_id/files',
    {
      schema: {
        summary: 'Delete a file with its strings and translations',
        tags: ['files'],
        security,
        params: S.ProjectParams,
        querystring: Type.Object({ ...S.AuthQuery, file_name: Type.String({ minLength: 1, maxLength: 255 }) }),
        response: S.envelope(200, Type.Object({ name: Type.String() })),
      },
    },
    async (request) => {
      const project = await projectFor(request);
      const name = (request.query as { file_name: string }).file_name;
      const file = await findFile(kysely, project.id, name);
      if (!file) throw new HttpError(404, `file_name: no file "${name.slice(0, 100)}" in project ${project.id}`);
      await kysely.deleteFrom('quote_files').where('id', '=', file.id).execute();
      return { meta: { status: 200 }, data: { name } };
    },
  );

  app.get(
    '/1/projects/:project_id/translations',
    {
      schema: {
        summary: 'Export a file with its translations in one language',
        tags: ['files'],
        security,
        params: S.ProjectParams,
        querystring: Type.Object({
          ...S.AuthQuery,
          locale: Type.String({ maxLength: 40 }),
          source_file_name: Type.String({ minLength: 1, maxLength: 255 }),
          export_file_name: Type.Optional(Type.String({ maxLength: 255 })),
        }),
        response: {
          200: {
            description: 'The file, in its format',
            content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
          },
        },
      },
    },
    async (request, reply) => {
      const project = await projectFor(request);
      const query = request.query as { locale: string; source_file_name: string; export_file_name?: string };
      const language = requireLanguage('locale', query.locale);
      const file = await exportFile(db, pool, project, language, query.source_file_name, query.export_file_name);
      return reply
        .type(file.mime)
        .header('content-disposition', `attachment; filename="${file.name}"`)
        .send(file.content);
    },
  );

  // ---- quotations and orders ------------------------------------------------------------
  function quoteRequest(project: Project, params: Record<string, any>): QuoteRequest {
    const to = requireLanguage('to_locale', String(params.to_locale));
    const from = findLanguage(project.base_locale)!;
    if (to.code === from.code) {
      throw new HttpError(400, `to_locale: ${to.code} is the base language of project ${project.id}`);
    }
    return {
      files: params.files,
      to,
      from,
      includeNotTranslated: params.is_including_not_translated ?? true,
      includeNotApproved: params.is_including_not_approved ?? true,
      includeOutdated: params.is_including_outdated ?? true,
      specialization: (params.specialization ?? 'general') as Specialization,
    };
  }

  app.get(
    '/1/projects/:project_id/quotations',
    {
      preValidation: async (request) =>
        normalizeQuery(request.query as Record<string, unknown>, ['files'], QUOTE_BOOLEANS),
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
      const project = await projectFor(request);
      const quoteParams = quoteRequest(project, request.query as Record<string, unknown>);
      const quotation = await makeQuotation(kysely, quotes, project, quoteParams, Date.now());
      return { meta: { status: 200 }, data: quotationBody(quotation, quoteParams) };
    },
  );

  app.post(
    '/1/projects/:project_id/orders',
    {
      preValidation: async (request) => {
        // Parameters come in the body (JSON) or the query string; the body wins. No prototype: the
        // names are the caller's, and Object.assign would run the `__proto__` setter of a plain object.
        const merged: Record<string, unknown> = Object.assign(Object.create(null), request.query);
        if (request.body && typeof request.body === 'object') Object.assign(merged, request.body);
        const files = readList(merged, 'files');
        normalizeQuery(merged, ['files'], QUOTE_BOOLEANS);
        if (files) merged.files = files;
        request.body = merged;
      },
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
      const project = await projectFor(request);
      const body = request.body as Record<string, any>;
      const params = quoteRequest(project, body);
      const level: OrderLevel = body.order_type ?? 'translate-only';
      const order = await createOrder(kysely, quotes, project, principalOf(request), params, {
        orderType: level,
        translatorType: body.translator_type ?? 'fastest',
        tone: body.tone ?? 'not-specified',
        note: body.note ?? '',
      });
      return reply.code(201).send({ meta: { status: 201 }, data: await orderBody(kysely, order, true) });
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
        querystring: Type.Object({
          ...S.AuthQuery,
          ...S.PageQuery,
          file_name: Type.Optional(Type.String({ maxLength: 255 })),
        }),
        response: S.envelope(200, Type.Array(S.Order)),
      },
    },
    async (request) => {
      const project = await projectFor(request);
      const {
        page = 1,
        per_page: perPage = 50,
        file_name: fileName,
      } = request.query as { page?: number; per_page?: number; file_name?: string };
      const rows = await kysely
        .selectFrom('quote_orders')
        .selectAll()
        .where('project_id', '=', project.id)
        .orderBy('id', 'desc')
        .execute();
      const matching = fileName ? rows.filter((row) => (JSON.parse(row.files) as string[]).includes(fileName)) : rows;
      const pages = Math.ceil(matching.length / perPage);
      const data = [];
      for (const row of matching.slice((page - 1) * perPage, page * perPage)) {
        data.push(await orderBody(kysely, { ...row, id: Number(row.id) }, false));
      }
      const link = (n: number) =>
        `/1/projects/${project.id}/orders?page=${n}&per_page=${perPage}${fileName ? `&file_name=${encodeURIComponent(fileName)}` : ''}`;
      return {
        meta: {
          status: 200,
          record_count: matching.length,
          page_count: pages,
          next_page: page < pages ? link(page + 1) : null,
          prev_page: page > 1 ? link(page - 1) : null,
        },
        data,
      };
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
        querystring: Type.Object(S.AuthQuery),
        response: S.envelope(200, S.Order),
      },
    },
    async (request) => {
      const project = await projectFor(request);
      const id = (request.params as { order_id: number }).order_id;
      const row = await kysely
        .selectFrom('quote_orders')
        .selectAll()
        .where('project_id', '=', project.id)
        .where('id', '=', id)
        .executeTakeFirst();
      if (!row) throw new HttpError(404, `order ${id} not found in project ${project.id}`);
      return { meta: { status: 200 }, data: await orderBody(kysely, { ...row, id: Number(row.id) }, true) };
    },
  );
}
