// The /api/tasks routes: the original create and delete (docs/tasks.md), plus list, get and update.
// A user sees and changes only their own tasks (others' answer 404); an admin any.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Principal } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import type { ServiceContext } from '../services.js';
import { authenticate } from '../users/access.js';
import { queryOrBody } from '../users/input.js';
import { bearer, errors, IdFields, IdQuery, noContent, optionalJsonBody, Page, pageOf } from '../users/schemas.js';
import { ownerId } from './owner.js';
import * as S from './schemas.js';
import { type Owner, type TaskRow, TasksStore } from './store.js';

const tags = ['tasks'];

export function publicTask(row: TaskRow) {
  return {
    id: String(row.id),
    title: row.title,
    description: row.description,
    done: row.done === 1,
    user: String(row.user_id),
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

/** Admins reach every task; users only their own. */
function scopeOf(principal: Principal): Owner {
  return principal.role === 'admin' ? null : Number(principal.userId);
}

function notFound(): HttpError {
  return new HttpError(404, 'No such task', { code: 'not_found' });
}

export async function registerTaskRoutes(scope: FastifyInstance, context: ServiceContext) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { identity } = context;
  const store = new TasksStore(context.db);

  app.post(
    '/api/tasks/create',
    {
      schema: {
        summary: 'Create a task',
        description: 'For yourself; an admin may create one for any user (`user`).',
        tags,
        security: bearer,
        body: S.CreateBody,
        response: { 201: S.TaskReply, ...errors(400, 401, 403, 404, 413, 415) },
      },
    },
    async (request, reply) => {
      const principal = await authenticate(identity, request);
      const { title, description = '', user } = request.body;
      const owner = user === undefined ? Number(principal.userId) : ownerId(user);
      if (principal.role !== 'admin' && String(owner) !== principal.userId) {
        throw new HttpError(403, 'You may only create tasks for yourself', { code: 'forbidden' });
      }
      const task = await store.insert(owner, title.trim(), description);
      if (!task) throw new HttpError(404, 'No such user', { code: 'not_found' });
      return reply.code(201).send({ task: publicTask(task) });
    },
  );

  app.get(
    '/api/tasks',
    {
      schema: {
        summary: 'List my tasks',
        description: 'Newest first, paginated, optionally only done or open ones. Admins may pass `user`.',
        tags,
        security: bearer,
        querystring: S.ListQuery,
        response: { 200: Page(S.Task), ...errors(400, 401, 403) },
      },
    },
    async (request) => {
      const principal = await authenticate(identity, request);
      const { page = 1, limit = 20, done, user } = request.query;
      if (user !== undefined && user !== principal.userId && principal.role !== 'admin') {
        throw new HttpError(403, "Only an admin may list another user's tasks", { code: 'forbidden' });
      }
      const { rows, total } = await store.list(Number(user ?? principal.userId), done, (page - 1) * limit, limit);
      return pageOf(rows.map(publicTask), page, limit, total);
    },
  );

  app.get(
    '/api/tasks/:id',
    {
      schema: {
        summary: 'Get one task',
        tags,
        security: bearer,
        params: S.TaskParams,
        response: { 200: S.TaskReply, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const principal = await authenticate(identity, request);
      const task = await store.get(Number(request.params.id), scopeOf(principal));
      if (!task) throw notFound();
      return { task: publicTask(task) };
    },
  );

  app.patch(
    '/api/tasks/:id',
    {
      schema: {
        summary: 'Change a task',
        description: 'Any of title, description and done.',
        tags,
        security: bearer,
        params: S.TaskParams,
        body: S.UpdateBody,
        response: { 200: S.TaskReply, ...errors(400, 401, 404, 415) },
      },
    },
    async (request) => {
      const principal = await authenticate(identity, request);
      const { title, description, done } = request.body;
      const task = await store.update(Number(request.params.id), scopeOf(principal), {
        title: title?.trim(),
        description,
        done,
      });
      if (!task) throw notFound();
      return { task: publicTask(task) };
    },
  );

  app.delete(
    '/api/tasks/delete',
    {
      schema: {
        summary: 'Delete a task',
        description: 'Owner or admin. `id` travels in the query string or in a JSON body.',
        tags,
        security: bearer,
        querystring: IdQuery,
        requestBody: optionalJsonBody(IdFields, 'Alternative to the query string'),
        response: { 204: noContent('Deleted'), ...errors(400, 401, 404) },
      },
    },
    async (request, reply) => {
      const principal = await authenticate(identity, request);
      const { id } = await queryOrBody(request, IdFields, ['id']);
      if (!(await store.delete(Number(id), scopeOf(principal)))) throw notFound();
      return reply.code(204).send();
    },
  );
}
