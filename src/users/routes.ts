// The /api/users routes: the eight of the original API (docs/tasks.md), plus logout, the reset request and
// API key pairs.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { bearerToken } from '../http/auth.js';
import { HttpError } from '../http/errors.js';
import type { ServiceContext } from '../services.js';
import { authenticate, requireAdmin, requireSelfOrAdmin } from './access.js';
import { type Accounts, publicUser } from './accounts.js';
import { createApiKey } from './apikeys.js';
import { API_KEY_PATTERN } from './identity.js';
import { badInput, queryOrBody, validateBody } from './input.js';
import { type Mailer, resetMail } from './mail.js';
import { checkPhoto, readPhotoUpdate } from './photos.js';
import * as S from './schemas.js';

export interface UsersDeps {
  context: ServiceContext;
  accounts: Accounts;
  mailer: Mailer;
  /** Runs work after the answer is sent (kept until shutdown). */
  later(work: () => Promise<void>): void;
}

const tags = ['users'];

export async function registerUserRoutes(scope: FastifyInstance, deps: UsersDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { context, accounts, mailer } = deps;
  const { identity } = context;
  const { store } = accounts;
  const config = context.config.users;

  app.post(
    '/api/users/register',
    {
      schema: {
        summary: 'Create an account',
        description:
          'Anyone may register; the account gets the role `user` (admins come from the CLI or bootstrap variables). ' +
          'A taken email or username answers 409 without saying which; ' +
          'registrations are rate-limited per client address.',
        tags,
        body: S.RegisterBody,
        response: { 201: S.UserReply, ...S.errors(400, 409, 413, 415, 429) },
      },
    },
    async (request, reply) => {
      await accounts.limitRegistrations(request.ip);
      const user = await accounts.register(request.body);
      return reply.code(201).send({ user: publicUser(user) });
    },
  );

  app.post(
    '/api/users/login',
    {
      schema: {
        summary: 'Log in and get an access token',
        description:
          'Unknown email and wrong password give the same 401. ' +
          'Attempts are limited per account and per client address (429 with Retry-After).',
        tags,
        body: S.LoginBody,
        response: { 200: S.LoginReply, ...S.errors(400, 401, 415, 429) },
      },
    },
    async (request) => {
      const { token, expiresAt, user } = await accounts.login(request.body.email, request.body.password, request.ip);
      return {
        token,
        token_type: 'Bearer' as const,
        expires_at: new Date(expiresAt).toISOString(),
        user: publicUser(user),
      };
    },
  );

  app.post(
    '/api/users/logout',
    {
      schema: {
        summary: 'End this session',
        description: 'The bearer token stops working at once, in every process.',
        tags,
        security: S.bearer,
        response: { 204: S.noContent('Logged out'), ...S.errors(401) },
      },
    },
    async (request, reply) => {
      await authenticate(identity, request);
      await accounts.logout(bearerToken(request.headers.authorization)!);
      return reply.code(204).send();
    },
  );

  app.delete(
    '/api/users/delete',
    {
      schema: {
        summary: 'Delete an account',
        description:
          'The user themself or an admin. Removes the user with their tasks, photo, tokens and API keys at once. ' +
          '`id` travels in the query string or in a JSON body.',
        tags,
        security: S.bearer,
        querystring: S.IdQuery,
        requestBody: S.optionalJsonBody(S.IdFields, 'Alternative to the query string'),
        response: { 204: S.noContent('Deleted'), ...S.errors(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const principal = await authenticate(identity, request);
      const { id } = await queryOrBody(request, S.IdFields, ['id']);
      requireSelfOrAdmin(principal, String(id));
      if (!(await store.deleteUser(Number(id)))) throw new HttpError(404, 'No such user', { code: 'not_found' });
      return reply.code(204).send();
    },
  );

  app.post(
    '/api/users/forgotpassword/request',
    {
      schema: {
        summary: 'Ask for a password reset code by e-mail',
        description:
          'Always 202, whether or not the email has an account. The mail carries a single-use code valid for ' +
          `${Math.round(config.resetTtlMs / 60000)} minutes ` +
          '(SMTP when configured, else the outbox read with `quartet users outbox`).',
        tags,
        body: S.ResetRequestBody,
        response: { 202: S.Accepted, ...S.errors(400, 415, 429) },
      },
    },
    async (request, reply) => {
      await accounts.limitResetRequests(request.ip);
      const email = request.body.email;
      // The work happens after the answer, so its duration says nothing about the account.
      deps.later(async () => {
        const issued = await accounts.requestReset(email, (to, token) => resetMail(config, to, token));
        if (issued) await mailer.deliver(issued.outboxId, issued.mail);
      });
      return reply
        .code(202)
        .send({ status: 'accepted', detail: 'If this email has an account, a reset code is on its way' });
    },
  );

  app.put(
    '/api/users/forgotpassword',
    {
      schema: {
        summary: 'Set a new password',
        description:
          'Needs proof: either `token` (the reset code from the mail; ends every session), or a bearer token of the ' +
          'account with `current_password` (ends every other session). ' +
          'An invalid code answers the same whether or not the email exists.',
        tags,
        body: S.ResetBody,
        response: { 204: S.noContent('Password changed'), ...S.errors(400, 401, 403, 415, 429) },
      },
    },
    async (request, reply) => {
      const { email, password, token, current_password } = request.body;
      if (token !== undefined && current_password !== undefined) {
        throw badInput([
          {
            loc: ['body', 'current_password'],
            msg: 'Give either token or current_password, not both',
            type: 'conflict',
          },
        ]);
      }
      if (token !== undefined) {
        await accounts.resetWithToken(email, token, password, request.ip);
      } else if (current_password !== undefined) {
        const principal = await authenticate(identity, request);
        if (principal.email.toLowerCase() !== email.trim().toLowerCase()) {
          throw new HttpError(403, 'You may only change your own password', { code: 'forbidden' });
        }
        await accounts.changeWithCurrent(
          principal.userId,
          email,
          current_password,
          password,
          bearerToken(request.headers.authorization)!,
          request.ip,
        );
      } else {
        throw badInput([
          { loc: ['body', 'token'], msg: 'Field required (or current_password with a bearer token)', type: 'missing' },
        ]);
      }
      return reply.code(204).send();
    },
  );

  app.put(
    '/api/users/update',
    {
      bodyLimit: Math.ceil((config.photoMaxBytes * 4) / 3) + 16 * 1024,
      schema: {
        summary: 'Set or remove the photo',
        description:
          'The email and current password are the proof (limited like login). The photo comes as a multipart file ' +
          'named `photo` or as a base64 data URL in JSON (`null` removes it); ' +
          `PNG, JPEG, WebP or GIF by content, at most ${config.photoMaxBytes} bytes.`,
        tags,
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: S.UpdateJsonBody },
            'multipart/form-data': { schema: S.UpdateMultipartBody },
          },
        },
        response: { 200: S.UserReply, ...S.errors(400, 401, 409, 413, 415, 429) },
      },
    },
    async (request) => {
      const input = await readPhotoUpdate(request, config.photoMaxBytes);
      const contentType = input.photo && checkPhoto(input.photo.bytes, input.photo.declared, config.photoMaxBytes);
      const user = await accounts.checkPassword(input.email, input.password, request.ip);
      if (input.photo && contentType) await store.setPhoto(user.id, contentType, input.photo.bytes);
      else await store.deletePhoto(user.id);
      return { user: publicUser(await accounts.existingUser(user.id)) };
    },
  );

  app.get(
    '/api/users/all',
    {
      schema: {
        summary: 'List every user (admins)',
        description: 'Paginated, oldest first.',
        tags,
        security: S.bearer,
        querystring: S.PageQuery,
        response: { 200: S.Page(S.User), ...S.errors(400, 401, 403) },
      },
    },
    async (request) => {
      requireAdmin(await authenticate(identity, request));
      const { page = 1, limit = 20 } = request.query;
      const { rows, total } = await store.listUsers((page - 1) * limit, limit);
      return S.pageOf(rows.map(publicUser), page, limit, total);
    },
  );

  app.get(
    '/api/users/find',
    {
      schema: {
        summary: 'Get a user by id',
        description: 'Yourself, or anyone for an admin. `id` travels in the query string or in a JSON body.',
        tags,
        security: S.bearer,
        querystring: S.IdQuery,
        response: { 200: S.UserReply, ...S.errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const principal = await authenticate(identity, request);
      const { id } = await queryOrBody(request, S.IdFields, ['id']);
      requireSelfOrAdmin(principal, String(id));
      const user = await store.userById(Number(id));
      if (!user) throw new HttpError(404, 'No such user', { code: 'not_found' });
      return { user: publicUser(user) };
    },
  );

  app.get(
    '/api/users/getimage',
    {
      schema: {
        summary: "Get a user's photo",
        description:
          'For any authenticated caller. ' +
          'The stored bytes with their content type and `X-Content-Type-Options: nosniff`; ' +
          '404 when the email has no photo. `email` travels in the query string or in a JSON body.',
        tags,
        security: S.bearer,
        querystring: S.EmailFields,
        response: {
          200: {
            description: 'The image',
            content: Object.fromEntries(
              ['image/png', 'image/jpeg', 'image/webp', 'image/gif'].map((type) => [
                type,
                { schema: { type: 'string', format: 'binary' } },
              ]),
            ),
          },
          ...S.errors(400, 401, 404),
        },
      },
    },
    async (request, reply) => {
      await authenticate(identity, request);
      const { email } = await queryOrBody(request, S.EmailFields, ['email']);
      const photo = await store.photoByEmail(email.trim());
      if (!photo) throw new HttpError(404, 'No photo for this email', { code: 'not_found' });
      return reply
        .type(photo.content_type)
        .header('X-Content-Type-Options', 'nosniff')
        .header('Content-Security-Policy', "default-src 'none'")
        .header('Cache-Control', 'private, no-cache')
        .send(Buffer.from(photo.bytes));
    },
  );

  app.post(
    '/api/users/apikeys',
    {
      schema: {
        summary: 'Create an API key pair (for the quotation API)',
        description: 'The secret is shown only in this answer and stored encrypted. At most 10 pairs per user.',
        tags,
        security: S.bearer,
        requestBody: S.optionalJsonBody(S.ApiKeyCreateBody, 'Optional label'),
        response: { 201: S.ApiKeyCreated, ...S.errors(400, 401, 409, 415, 503) },
      },
    },
    async (request, reply) => {
      const principal = await authenticate(identity, request);
      const body = request.body === undefined ? {} : validateBody(S.ApiKeyCreateBody, request.body);
      const created = await createApiKey(store, context.config, Number(principal.userId), body.name);
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/api/users/apikeys',
    {
      schema: {
        summary: 'List my API keys (without secrets)',
        tags,
        security: S.bearer,
        response: { 200: S.ApiKeyList, ...S.errors(401) },
      },
    },
    async (request) => {
      const principal = await authenticate(identity, request);
      const rows = await store.apiKeysOf(Number(principal.userId));
      return {
        results: rows.map((row) => ({
          api_key: row.api_key,
          name: row.name,
          created_at: new Date(row.created_at).toISOString(),
        })),
      };
    },
  );

  app.delete(
    '/api/users/apikeys',
    {
      schema: {
        summary: 'Revoke one of my API keys',
        description: '`api_key` travels in the query string or in a JSON body; the key stops working at once.',
        tags,
        security: S.bearer,
        querystring: S.ApiKeyFields,
        requestBody: S.optionalJsonBody(S.ApiKeyFields, 'Alternative to the query string'),
        response: { 204: S.noContent('Revoked'), ...S.errors(400, 401, 404) },
      },
    },
    async (request, reply) => {
      const principal = await authenticate(identity, request);
      const { api_key } = await queryOrBody(request, S.ApiKeyFields, ['api_key']);
      if (!API_KEY_PATTERN.test(api_key) || !(await store.deleteApiKey(Number(principal.userId), api_key))) {
        throw new HttpError(404, 'No such API key', { code: 'not_found' });
      }
      return reply.code(204).send();
    },
  );
}
