// /1/project-groups and their projects: OneSky's way of creating projects (in a group, with a type).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  createGroup,
  deleteGroup,
  groupDetails,
  groupLanguages,
  listGroups,
  projectsOfGroup,
  requireGroup,
} from '../projects/groups.js';
import { mergeParameters } from '../common/params.js';
import { createProject, projectBody } from '../projects/projects.js';
import * as S from '../schemas.js';
import { principalOf, security, type QuotesDeps } from './context.js';

export function registerGroupRoutes(scope: FastifyInstance, { db }: QuotesDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['project groups'];
  const groupOf = (request: FastifyRequest & { params: { project_group_id: number } }) =>
    requireGroup(db.kysely, request.params.project_group_id, principalOf(request));
  // Parameters in a JSON or form body, or in the query string (the Python client's way).
  const fromBodyOrQuery = mergeParameters();

  app.get(
    '/1/project-groups',
    {
      schema: {
        summary: 'Project groups of the caller (all for an admin), paged',
        tags,
        security,
        querystring: S.GroupsQuery,
        response: S.envelope(200, Type.Array(S.NamedItem)),
      },
    },
    async (request) => {
      const { page = 1, per_page: perPage = 50 } = request.query;
      return listGroups(db.kysely, principalOf(request), page, perPage);
    },
  );

  app.post(
    '/1/project-groups',
    {
      preValidation: fromBodyOrQuery,
      schema: {
        summary: 'Create a project group',
        tags,
        security,
        consumes: ['application/json', 'application/x-www-form-urlencoded'],
        body: S.CreateGroupBody,
        response: S.envelope(201, S.GroupCreated),
      },
    },
    async (request, reply) => {
      const data = await createGroup(db.kysely, principalOf(request), request.body);
      return reply.code(201).send({ meta: { status: 201 }, data });
    },
  );

  app.get(
    '/1/project-groups/:project_group_id',
    {
      schema: {
        summary: 'Show a project group: its base language and how many languages and projects it has',
        tags,
        security,
        params: S.GroupParams,
        querystring: S.AuthOnlyQuery,
        response: S.envelope(200, S.GroupDetails),
      },
    },
    async (request) => ({ meta: { status: 200 }, data: await groupDetails(db.kysely, await groupOf(request)) }),
  );

  app.delete(
    '/1/project-groups/:project_group_id',
    {
      schema: {
        summary: 'Delete a project group with its projects (and their files, translations and orders)',
        tags,
        security,
        params: S.GroupParams,
        querystring: S.AuthOnlyQuery,
        response: S.envelope(200, Type.Object({})),
      },
    },
    async (request) => {
      await deleteGroup(db.kysely, (await groupOf(request)).id);
      return { meta: { status: 200 }, data: {} };
    },
  );

  app.get(
    '/1/project-groups/:project_group_id/languages',
    {
      schema: {
        summary: 'The languages of a project group: its base language, then those of its projects',
        tags,
        security,
        params: S.GroupParams,
        querystring: S.AuthOnlyQuery,
        response: S.envelope(200, Type.Array(S.GroupLanguage)),
      },
    },
    async (request) => {
      const data = await groupLanguages(db.kysely, await groupOf(request));
      return { meta: { status: 200, record_count: data.length }, data };
    },
  );

  app.get(
    '/1/project-groups/:project_group_id/projects',
    {
      schema: {
        summary: 'The projects of a project group, oldest first',
        tags,
        security,
        params: S.GroupParams,
        querystring: S.AuthOnlyQuery,
        response: S.envelope(200, Type.Array(S.NamedItem)),
      },
    },
    async (request) => {
      const data = await projectsOfGroup(db.kysely, (await groupOf(request)).id);
      return { meta: { status: 200, record_count: data.length }, data };
    },
  );

  app.post(
    '/1/project-groups/:project_group_id/projects',
    {
      preValidation: fromBodyOrQuery,
      schema: {
        summary: "Create a project in a group: it takes the group's base language",
        tags,
        security,
        params: S.GroupParams,
        consumes: ['application/json', 'application/x-www-form-urlencoded'],
        body: S.CreateGroupProjectBody,
        response: S.envelope(201, S.Project),
      },
    },
    async (request, reply) => {
      const group = await groupOf(request);
      const project = await createProject(db, principalOf(request), request.body, group);
      return reply.code(201).send({ meta: { status: 201 }, data: await projectBody(db.kysely, project) });
    },
  );
}
