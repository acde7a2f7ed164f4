// Signing in and the operator's credentials, at Routstr's paths: login and logout, the password,
// CLI tokens; and the audit log of every change (a quartet addition).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { readAudit } from './audit.js';
import { MIN_PASSWORD_LENGTH } from './operator-auth.js';
import { operatorError, operatorOfRequest, type OperatorDeps } from './operator-api.js';

const Ok = Type.Object({ ok: Type.Boolean() });

export function authRoutes(deps: OperatorDeps) {
  const { auth, db } = deps;
  return async (scope: FastifyInstance) => {
    const app = scope.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/admin/api/login',
      {
        config: { operatorPublic: true },
        schema: {
          summary: 'Log in with the operator password',
          body: Type.Object({ password: Type.String({ maxLength: 1024 }) }),
          response: {
            200: Type.Object({ ok: Type.Boolean(), token: Type.String(), expires_in: Type.Integer() }),
          },
        },
      },
      async (request, reply) => {
        const outcome = await auth.login(request.body.password, request.ip);
        switch (outcome.kind) {
          case 'ok':
            return { ok: true, token: outcome.token, expires_in: outcome.expiresInSeconds };
          case 'not-configured':
            // Nothing to log in to (as the page's login answers): a users API admin's token still works.
            throw operatorError(
              404,
              'admin_password_not_configured',
              'Admin password not configured: set PROXY_ADMIN_PASSWORD',
            );
          case 'rate-limited': {
            const seconds = Math.ceil(outcome.retryAfterMs / 1000);
            reply.header('retry-after', String(seconds));
            throw operatorError(429, 'rate_limited', `Too many login attempts; try again in ${seconds} s`);
          }
          case 'wrong-password':
            throw operatorError(401, 'invalid_password', 'Invalid password');
        }
      },
    );

    app.post(
      '/admin/api/logout',
      { schema: { summary: 'End this session token', response: { 200: Ok } } },
      async (request) => {
        const { bearer } = operatorOfRequest(request);
        if (bearer) await auth.logout(bearer);
        return { ok: true };
      },
    );

    app.patch(
      '/admin/api/password',
      {
        schema: {
          summary: 'Change the operator password (ends every session token)',
          body: Type.Object({
            current_password: Type.String({ maxLength: 1024 }),
            new_password: Type.String({ maxLength: 1024 }),
          }),
          response: { 200: Type.Object({ ok: Type.Boolean(), message: Type.String() }) },
        },
      },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const next = request.body.new_password.trim();
        if (next.length < MIN_PASSWORD_LENGTH) {
          throw operatorError(
            400,
            'password_too_short',
            `New password must be at least ${MIN_PASSWORD_LENGTH} characters`,
          );
        }
        if (!(await auth.changePassword(request.body.current_password, next, actor))) {
          throw operatorError(401, 'invalid_password', 'Current password is incorrect');
        }
        return { ok: true, message: 'Password updated successfully' };
      },
    );

    const CliToken = Type.Object({
      id: Type.String(),
      name: Type.String(),
      token_preview: Type.String(),
      created_by: Type.String(),
      created_at: Type.Integer(),
      last_used_at: Type.Union([Type.Integer(), Type.Null()]),
      expires_at: Type.Union([Type.Integer(), Type.Null()]),
    });

    app.get(
      '/admin/api/cli-tokens',
      { schema: { summary: 'The CLI tokens (previews only)', response: { 200: Type.Array(CliToken) } } },
      async () => auth.listCliTokens(),
    );

    app.post(
      '/admin/api/cli-tokens',
      {
        schema: {
          summary: 'Create a long-lived CLI token (shown once)',
          body: Type.Object({
            name: Type.String({ maxLength: 200 }),
            expires_in_days: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 36_500 }), Type.Null()])),
          }),
          response: {
            200: Type.Object({
              id: Type.String(),
              name: Type.String(),
              token: Type.String(),
              created_at: Type.Integer(),
              expires_at: Type.Union([Type.Integer(), Type.Null()]),
            }),
          },
        },
      },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const name = request.body.name.trim();
        if (!name) throw operatorError(400, 'name_required', 'Name is required');
        return auth.createCliToken(name, request.body.expires_in_days ?? null, actor);
      },
    );

    app.delete(
      '/admin/api/cli-tokens/:token_id',
      {
        schema: {
          summary: 'Revoke a CLI token',
          params: Type.Object({ token_id: Type.String({ maxLength: 40 }) }),
          response: { 200: Type.Object({ ok: Type.Boolean(), deleted_id: Type.String() }) },
        },
      },
      async (request) => {
        const { actor } = operatorOfRequest(request);
        const id = request.params.token_id;
        const revoked = /^[1-9][0-9]{0,14}$/.test(id) && (await auth.revokeCliToken(Number(id), actor));
        if (!revoked) throw operatorError(404, 'not_found', 'Token not found');
        return { ok: true, deleted_id: id };
      },
    );

    app.get(
      '/admin/api/audit-log',
      {
        schema: {
          summary: 'Every change made through the operator API or page, newest first',
          querystring: Type.Object({
            action: Type.Optional(Type.String({ maxLength: 100 })),
            target: Type.Optional(Type.String({ maxLength: 300 })),
            limit: Type.Integer({ minimum: 1, maximum: 500, default: 100 }),
            offset: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 }),
          }),
        },
      },
      async (request) => {
        const { action, target, limit, offset } = request.query;
        return {
          entries: await readAudit(db.kysely, { action: action ?? null, target: target ?? null, limit, offset }),
        };
      },
    );
  };
}
