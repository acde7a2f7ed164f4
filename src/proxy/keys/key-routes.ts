// Routes of keys with limits (issue 14, docs/proxy-wallet.md#child-keys): a parent key creates,
// lists, revokes and resets child keys under /v1/balance/child-key, and every key reads its
// billed requests at /v1/balance/history. Also under /v1/wallet/, as the other balance routes.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import type { Authenticator } from './accounts.js';
import type { ChildKeys } from './child-keys.js';
import {
  AuthorizationHeader,
  ChildKeyEntry,
  ChildKeyCreateBody,
  ChildKeyCreated,
  ChildKeyList,
  ChildKeyParams,
  ChildKeyResetBody,
  ChildKeyResetResult,
  HistoryList,
  keyErrors,
  PageQuery,
} from '../common/schemas.js';
import { billedRequests } from './store.js';

export interface KeyRoutesDeps {
  db: Database;
  authenticator: Authenticator;
  childKeys: ChildKeys;
}

const prefixes = ['/v1/balance', '/v1/wallet'];

export async function registerKeyRoutes(scope: FastifyInstance, deps: KeyRoutesDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { db, authenticator, childKeys } = deps;

  /** The parent account of the header; a child key gets `refusal` (Routstr's words), as a 400. */
  const parent = (authorization: string | undefined, refusal: string) =>
    authenticator.account(authorization).catch((error: unknown) => {
      if (error instanceof HttpError && error.options.code === 'child_key_not_allowed') {
        throw new HttpError(400, refusal, { code: 'child_key_not_allowed', detail: refusal });
      }
      throw error;
    });

  for (const prefix of prefixes) {
    const hide = prefix === '/v1/wallet';
    app.post(
      `${prefix}/child-key`,
      {
        schema: {
          hide,
          summary: 'Create child keys',
          description:
            "Creates `count` keys that pay for requests from this key's balance, each within `balance_limit` " +
            'msat per `balance_limit_reset` period (UTC calendar days, ISO weeks, months, or `none`: one period) ' +
            'until `validity_date`. A request that would take a key above its limit is refused with 402 ' +
            '`balance_limit_exceeded`. The keys are shown once; only their hashes are kept. A child key cannot ' +
            'create keys, top up or refund.',
          headers: AuthorizationHeader,
          body: ChildKeyCreateBody,
          response: { 200: ChildKeyCreated, ...keyErrors([400, 401, 422]) },
        },
      },
      async (request) => {
        const account = await parent(request.headers.authorization, 'Cannot create a child key for another child key.');
        const body = request.body;
        return childKeys.create(account, {
          count: body.count ?? 1,
          limitMsat: body.balance_limit ?? null,
          resetPeriod: body.balance_limit_reset ?? 'none',
          validityDate: body.validity_date ?? null,
        });
      },
    );

    app.get(
      `${prefix}/child-key`,
      {
        schema: {
          hide,
          summary: 'List child keys',
          description:
            "The child keys of this key's balance, newest first, revoked ones included, with their limits and " +
            'spending. Paged by `limit` and `before`.',
          headers: AuthorizationHeader,
          querystring: PageQuery,
          response: { 200: ChildKeyList, ...keyErrors([400, 401, 422]) },
        },
      },
      async (request) => {
        const account = await parent(request.headers.authorization, 'Only the parent key can list child keys.');
        return childKeys.list(account, { before: request.query.before, limit: request.query.limit ?? 50 });
      },
    );

    app.delete(
      `${prefix}/child-key/:id`,
      {
        schema: {
          hide,
          summary: 'Revoke a child key',
          description:
            'Revokes the child key for good: its next request is refused (401 `invalid_api_key`); requests in ' +
            'flight finish and are charged. Revoking it again answers the same.',
          headers: AuthorizationHeader,
          params: ChildKeyParams,
          response: { 200: ChildKeyEntry, ...keyErrors([400, 401, 404, 422]) },
        },
      },
      async (request) => {
        const account = await parent(request.headers.authorization, 'Only the parent key can revoke child keys.');
        return childKeys.revoke(account, request.params.id);
      },
    );

    app.post(
      `${prefix}/child-key/reset`,
      {
        schema: {
          hide,
          summary: "Start a child key's period afresh",
          description: "Routstr's reset: what the child key spent in its current period no longer counts.",
          headers: AuthorizationHeader,
          body: ChildKeyResetBody,
          response: { 200: ChildKeyResetResult, ...keyErrors([400, 401, 404, 422]) },
        },
      },
      async (request) => {
        const account = await parent(request.headers.authorization, 'Only the parent key can reset child keys.');
        return childKeys.reset(account, request.body.child_key);
      },
    );

    app.get(
      `${prefix}/history`,
      {
        schema: {
          hide,
          summary: 'Billed requests of this key',
          description:
            "The requests charged to this key, newest first, with their cost: a parent key's include its " +
            "child keys' (`child_key_id`), a child key's are its own. Paged by `limit` and `before`. (Routstr " +
            'lists its Cashu transactions here; this node lists refunds at GET /v1/wallet/refunds.)',
          headers: AuthorizationHeader,
          querystring: PageQuery,
          response: { 200: HistoryList, ...keyErrors([400, 401, 422]) },
        },
      },
      async (request) => {
        const { account, child } = await authenticator.owner(request.headers.authorization);
        const limit = request.query.limit ?? 50;
        const rows = await billedRequests(
          db.kysely,
          { accountId: account.id, childKeyId: child?.id ?? null },
          { before: request.query.before, limit },
        );
        const seconds = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000));
        return {
          requests: rows.map((row) => ({
            id: row.id,
            request_id: row.request_id,
            created_at: seconds(row.created_at)!,
            settled_at: seconds(row.settled_at),
            path: row.path,
            model: row.model,
            stream: row.stream === 1,
            payment: row.payment,
            cost: { total_msats: row.charged_msat, input_msats: row.input_msat, output_msats: row.output_msat },
            cost_msats: row.cost_msat,
            usage: { prompt_tokens: row.prompt_tokens, completion_tokens: row.completion_tokens },
            usage_source: row.usage_source,
            child_key_id: row.child_key_id,
          })),
          next_before: rows.length === limit ? rows[rows.length - 1].id : null,
        };
      },
    );
  }
}
