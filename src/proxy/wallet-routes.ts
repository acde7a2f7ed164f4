// The wallet routes under /v1/wallet/ (docs/proxy-wallet.md): account information, top-up, refund
// and the list of refund tokens. Information, top-up and refund are also served under Routstr's
// /v1/balance/ prefix (issue 13), by the same handlers.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Database } from '../db/index.js';
import { HttpError } from '../http/errors.js';
import { apiKeyForToken, apiKeyOf, findAccountByKey, parseAuthorization, type Authenticator } from './keys/accounts.js';
import type { ChildKeys } from './keys/child-keys.js';
import type { Lightning } from './lightning/lightning-service.js';
import type { RedemptionLimit } from './keys/redeem-limit.js';
import {
  AuthorizationHeader,
  CreateQuery,
  LightningRefundResult,
  RefundBody,
  RefundList,
  RefundResult,
  RefundsQuery,
  TopupBody,
  TopupQuery,
  TopupResult,
  WalletInfo,
  walletErrors,
} from './common/schemas.js';
import { accountById, type Account } from './wallet/store.js';
import { refundAddressOf } from './lightning/store.js';
import { tokenError } from './wallet/tokens.js';
import type { NodeWallet } from './wallet/wallet.js';

// Today's prefix first, then Routstr's name for the same routes.
const balancePrefixes = ['/v1/wallet', '/v1/balance'];

export interface WalletRoutesDeps {
  db: Database;
  wallet: NodeWallet;
  authenticator: Authenticator;
  redemptionLimit: RedemptionLimit;
  lightning: Lightning;
  childKeys: ChildKeys;
}

export async function registerWalletRoutes(scope: FastifyInstance, deps: WalletRoutesDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { db, wallet, authenticator, redemptionLimit, lightning, childKeys } = deps;

  const infoSchema = {
    summary: 'Account information',
    description:
      'The account the `Authorization` header names: its API key, balance, reserved amount, available amount, total ' +
      'spent and total requests (all integer millisatoshis except the request count), and its creation time; ' +
      "`child_keys` as Routstr's node lists them, when it has any. A Cashu token sent as the bearer is redeemed " +
      'once and becomes the account.',
    headers: AuthorizationHeader,
    response: { 200: WalletInfo, ...walletErrors([400, 401, 409, 422, 429, 503]) },
  };
  const info = async (authorization: string) => {
    const account = await authenticator.account(authorization);
    // account() accepted the header, so it parses.
    return {
      ...walletInfo(apiKeyOf(parseAuthorization(authorization)!), account),
      child_keys: await childKeys.forInfo(account),
    };
  };
  for (const prefix of balancePrefixes) registerBalanceRoutes(prefix);
  app.get('/v1/wallet', { schema: { ...infoSchema, hide: true } }, (request) => info(request.headers.authorization));

  // Routstr opens an account from a token at /v1/balance/create: the token as the bearer does the same.
  const createSchema = {
    summary: 'Open an account with a Cashu token',
    description:
      'Redeems `initial_balance_token` once and answers the account it opens, as `GET /v1/wallet/` with that ' +
      'token as the bearer does.',
    querystring: CreateQuery,
    response: { 200: WalletInfo, ...walletErrors([400, 401, 409, 422, 429, 503]) },
  };
  for (const method of ['GET', 'POST'] as const) {
    app.route({
      method,
      url: '/v1/balance/create',
      schema: createSchema,
      handler: (request) => info(`Bearer ${request.query.initial_balance_token}`),
    });
  }

  function registerBalanceRoutes(prefix: string) {
    app.get(`${prefix}/`, { schema: infoSchema }, (request) => info(request.headers.authorization));
    app.get(`${prefix}/info`, { schema: infoSchema }, (request) => info(request.headers.authorization));

    app.post(
      `${prefix}/topup`,
      {
        schema: {
          summary: 'Top up the balance with a Cashu token',
          description:
            'Redeems the token by a swap at its mint (NUT-03), so it cannot be spent again, and credits its value ' +
            "minus the mint's input fee. The same token credits once, however often and however concurrently it is " +
            'sent. If the mint is unreachable the token is untouched (503). Token redemptions are limited per client ' +
            'address (429 with Retry-After). A token of a mint this node does not trust is swapped into its primary ' +
            'mint when PROXY_FOREIGN_MINTS allows it (`foreign_mint`, `swap_fee_msat`), else refused (400 ' +
            "`cashu_foreign_mint_swap_failed`). Routstr's `cashu_token`, in the query string or a JSON body " +
            '`{"cashu_token": …}`, is taken in place of a missing `ecash_token`.',
          querystring: TopupQuery,
          body: TopupBody,
          headers: AuthorizationHeader,
          response: { 200: TopupResult, ...walletErrors([400, 401, 409, 422, 429, 502, 503]) },
        },
        preValidation: async (request) => acceptCashuToken(request),
      },
      async (request) => {
        const account = await authenticator.account(request.headers.authorization);
        const result = await wallet.redeem(request.query.ecash_token, {
          credit: { accountId: account.id },
          purpose: 'topup',
          admit: () => redemptionLimit.count(request.ip),
        });
        if (result.creditedAccountId !== account.id) {
          throw tokenError('cashu_token_already_spent', 'This token has already been redeemed (it is spent)');
        }
        const after = await accountById(db.kysely, account.id);
        const foreign =
          result.foreignMint === null ? {} : { foreign_mint: result.foreignMint, swap_fee_msat: result.swapFeeMsat! };
        return { msats: result.amountMsat, fee_msats: result.feeMsat, balance: after!.balanceMsat, ...foreign };
      },
    );

    app.post(
      `${prefix}/refund`,
      {
        schema: {
          summary: 'Refund the available balance as a Cashu token',
          description:
            "Pays the whole available balance (in whole units of the account's mint) out as a new Cashu token of " +
            "the account's mint and unit; the mint's input fee comes out of the token (`fee_msats`). The debit " +
            'comes first and is given back if the token cannot be made. Amounts reserved by requests in flight ' +
            'stay. A token finished after its call had answered 503 (the recovery made it) is handed out first, ' +
            'before any new refund: one per call, the oldest first (`repeated`; `unclaimed` counts the others). ' +
            "With nothing new to refund, the last refund's token is returned again (`repeated`), so an answer lost " +
            'on the way can be fetched. GET /v1/wallet/refunds lists every refund token. Without `Authorization`, ' +
            'an `X-Cashu` header with the token that paid names its account, as Routstr answers it: the change ' +
            'of that payment (also in the X-Cashu response header), 425 with Retry-After while a request it pays ' +
            'is still running, 404 when it paid for nothing left to refund. With `{"lightning_address": …}` in ' +
            'the body, or a `Refund-LNURL` address given when the token was first used, the balance less the ' +
            "mint's Lightning fee reserve is paid to that address instead (docs/proxy-wallet.md#lightning).",
          headers: AuthorizationHeader,
          body: RefundBody,
          response: {
            200: Type.Union([RefundResult, LightningRefundResult]),
            ...walletErrors([400, 401, 404, 409, 422, 425, 429, 502, 503]),
          },
        },
        preValidation: async (request) => authorizeByFundingToken(request),
      },
      async (request, reply) => {
        const account = refundsByToken.has(request)
          ? await accountFundedBy(request.headers.authorization)
          : await authenticator.account(request.headers.authorization);
        const address = lightningAddressOf(request.body) ?? (await refundAddressOf(db.kysely, account.id));
        if (address !== null) {
          const paid = await lightning.payments.refund(account.id, address);
          return { ...paid, balance: (await accountById(db.kysely, account.id))!.balanceMsat };
        }
        const refund = await wallet.refund(account.id).catch((error) => {
          throw refundsByToken.has(request) && isNothingToRefund(error) ? refundNotFound() : error;
        });
        const after = await accountById(db.kysely, account.id);
        // Routstr's node hands the token out in X-Cashu too, where its clients look for change.
        if (refundsByToken.has(request)) reply.header('x-cashu', refund.token);
        return {
          msats: refund.msats,
          fee_msats: refund.feeMsat,
          token: refund.token,
          mint: refund.mintUrl,
          unit: refund.unit,
          balance: after!.balanceMsat,
          repeated: refund.repeated,
          unclaimed: refund.unclaimed,
        };
      },
    );
  }

  /**
   * Refund by X-Cashu, as Routstr's node answers it: the payment's change is fetched with the token that
   * paid. 404 when that token paid nothing here (its clients then stop asking), 425 while a request it
   * pays is still running (its remainder is only known once it is settled).
   */
  async function accountFundedBy(authorization: string | undefined): Promise<Account> {
    const account = await findAccountByKey(db.kysely, apiKeyOf(parseAuthorization(authorization!)!));
    if (!account) throw refundNotFound();
    if (account.reservedMsat > 0) {
      throw new HttpError(425, 'Refund is pending: a request this token pays is still running; retry shortly', {
        code: 'refund_pending',
        detail: 'Refund is pending; retry shortly.',
        headers: { 'retry-after': '2' },
      });
    }
    return account;
  }

  app.get(
    '/v1/wallet/refunds',
    {
      schema: {
        summary: 'List the refunds of the account',
        description:
          'Every refund of the account that took money, newest first, with its token once the mint has made it ' +
          '(`pending` until then: the recovery finishes it), or its Lightning recipient (`lightning`) for a refund ' +
          'paid to a Lightning address. Failed refunds gave their debit back and are not listed. Paged by `limit` ' +
          'and `before`.',
        querystring: RefundsQuery,
        headers: AuthorizationHeader,
        response: { 200: RefundList, ...walletErrors([400, 401, 409, 422, 429, 503]) },
      },
    },
    async (request) => {
      const account = await authenticator.account(request.headers.authorization);
      const limit = request.query.limit ?? 50;
      const refunds = await wallet.refunds(account.id, { before: request.query.before, limit });
      return {
        refunds: refunds.map((r) => ({
          id: r.id,
          state: r.state,
          msats: r.msats,
          fee_msats: r.feeMsat,
          token: r.token,
          mint: r.mintUrl,
          unit: r.unit,
          created_at: Math.floor(r.createdAt / 1000),
          claimed: r.claimed,
          lightning: r.lightning && { recipient: r.lightning.recipient, amount_msats: r.lightning.amountMsat },
        })),
        next_before: refunds.length === limit ? refunds[refunds.length - 1].id : null,
      };
    },
  );
}

/**
 * Routstr's clients send the token as `cashu_token` (query or JSON body): it fills a missing `ecash_token` before the
 * query is validated, so today's name, answers and 422s stay as they are.
 */
function acceptCashuToken(request: FastifyRequest) {
  const query = request.query as Record<string, unknown>;
  if (query.ecash_token !== undefined) return;
  const body = request.body;
  const fromBody =
    typeof body === 'object' && body !== null && Object.hasOwn(body, 'cashu_token')
      ? (body as { cashu_token: unknown }).cashu_token
      : undefined;
  const token = query.cashu_token ?? fromBody;
  if (typeof token === 'string') query.ecash_token = token;
}

/** Refund requests that name their account by the token that funded it (X-Cashu alone). */
const refundsByToken = new WeakSet<FastifyRequest>();

/**
 * Routstr refunds an account by the token that funded it (`X-Cashu`, no Authorization): that account's key is
 * derived from the token, so the header becomes that key's bearer (the seed's required header is then there).
 */
function authorizeByFundingToken(request: FastifyRequest) {
  const token = request.headers['x-cashu'];
  if (request.headers.authorization !== undefined || typeof token !== 'string' || token.trim() === '') return;
  request.headers.authorization = `Bearer ${apiKeyForToken(token.trim())}`;
  refundsByToken.add(request);
}

/** The refund body's Lightning address, if any (Routstr's clients send no body at all). */
function lightningAddressOf(body: unknown): string | null {
  if (typeof body !== 'object' || body === null || !Object.hasOwn(body, 'lightning_address')) return null;
  const address = (body as { lightning_address: unknown }).lightning_address;
  return typeof address === 'string' ? address : null;
}

function isNothingToRefund(error: unknown): boolean {
  const code = error instanceof HttpError ? error.options.code : undefined;
  return code === 'no_balance_to_refund' || code === 'balance_too_small_to_refund';
}

function refundNotFound(): HttpError {
  return new HttpError(404, 'Refund not found: this token paid for nothing at this node that is left to refund', {
    code: 'refund_not_found',
    detail: 'Refund not found',
  });
}

function walletInfo(apiKey: string, account: Account) {
  return {
    api_key: apiKey,
    balance: account.balanceMsat,
    reserved: account.reservedMsat,
    available: account.balanceMsat - account.reservedMsat,
    total_spent: account.totalSpentMsat,
    total_requests: account.totalRequests,
    created_at: Math.floor(account.createdAt / 1000),
    last_used_at: account.lastUsedAt === null ? null : Math.floor(account.lastUsedAt / 1000),
    mint: account.mintUrl,
    unit: account.unit,
  };
}
