// /1/locales, /1/project-types and /1/projects: the supported languages and project types, and
// projects with their languages.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { LANGUAGES } from '../common/locales.js';
import { mergeParameters } from '../common/params.js';
import { PROJECT_TYPES } from '../projects/project-types.js';
import {
  changeProject,
  createProject,
  deleteProject,
  listProjects,
  projectBodies,
  projectBody,
  projectLanguages,
} from '../projects/projects.js';
import * as S from '../schemas.js';
import { principalOf, projectOf, security, type QuotesDeps } from './context.js';

export function registerProjectRoutes(scope: FastifyInstance, { db }: QuotesDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['projects'];
  // Parameters in a JSON or form body, or in the query string (the Python client's way).
  const fromBodyOrQuery = mergeParameters(['target_locales']);
  const consumes = ['application/json', 'application/x-www-form-urlencoded'];

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

  app.get(
    '/1/project-types',
    {
      schema: {
        summary: 'Every project type',
        tags,
        security,
        querystring: S.AuthOnlyQuery,
        response: S.envelope(200, Type.Array(S.ProjectType)),
      },
    },
    async () => ({ meta: { status: 200, record_count: PROJECT_TYPES.length }, data: PROJECT_TYPES }),
  );

  app.get(
    '/1/projects',
    {
      schema: {
        summary: 'Projects of the caller (all for an admin)',
        tags,
        security,
        querystring: S.AuthOnlyQuery,
        response: S.envelope(200, Type.Array(S.Project)),
      },
    },
    async (request) => {
      const data = await projectBodies(db.kysely, await listProjects(db.kysely, principalOf(request)));
      return { meta: { status: 200, record_count: data.length }, data };
    },
  );

  app.post(
    '/1/projects',
    {
      preValidation: fromBodyOrQuery,
      schema: {
        summary: 'Create a project outside any group (OneSky creates them in groups: /1/project-groups/…/projects)',
        tags,
        security,
        consumes,
        body: S.CreateProjectBody,
        response: S.envelope(201, S.Project),
      },
    },
    async (request, reply) => {
      const project = await createProject(db, principalOf(request), request.body);
      return reply.code(201).send({ meta: { status: 201 }, data: await projectBody(db.kysely, project) });
    },
  );

  app.get(
    '/1/projects/:project_id',
    {
      schema: {
        summary: 'Show a project',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.AuthOnlyQuery,
        response: S.envelope(200, S.Project),
      },
    },
    async (request) => ({ meta: { status: 200 }, data: await projectBody(db.kysely, await projectOf(db, request)) }),
  );

  app.put(
    '/1/projects/:project_id',
    {
      preValidation: fromBodyOrQuery,
      schema: {
        summary: 'Update a project',
        tags,
        security,
        params: S.ProjectParams,
        consumes,
        body: S.UpdateProjectBody,
        response: S.envelope(200, S.Project),
      },
    },
    async (request) => {
      const project = await projectOf(db, request);
      const updated = await changeProject(db, project, principalOf(request), request.body);
      return { meta: { status: 200 }, data: await projectBody(db.kysely, updated) };
    },
  );

  app.delete(
    '/1/projects/:project_id',
    {
      schema: {
        summary: 'Delete a project with its files, translations and orders',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.AuthOnlyQuery,
        response: S.envelope(200, Type.Object({})),
      },
    },
    async (request) => {
      await deleteProject(db.kysely, (await projectOf(db, request)).id);
      return { meta: { status: 200 }, data: {} };
    },
  );

  app.get(
    '/1/projects/:project_id/languages',
    {
      schema: {
        summary: 'The languages of a project with translation progress',
        tags,
        security,
        params: S.ProjectParams,
        querystring: S.AuthOnlyQuery,
        response: S.envelope(200, Type.Array(S.ProjectLanguage)),
      },
    },
    async (request) => {
      const data = await projectLanguages(db.kysely, await projectOf(db, request));
      return { meta: { status: 200, record_count: data.length }, data };
    },
  );
}
