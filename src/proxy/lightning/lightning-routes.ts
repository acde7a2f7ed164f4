// Lightning routes (RIP-08): invoices that open or top up an account, under Routstr's
// /v1/balance/lightning/ and /lightning/; and the Refund-LNURL header, the refund address a
// token names when it is first used. See docs/proxy-wallet.md#lightning.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { hitRateLimit } from '../../http/rate-limit.js';
import { apiKeyForToken, keyHash, parseAuthorization, type Authenticator } from '../keys/accounts.js';
import type { Lightning } from './lightning-service.js';
import { parseLightningAddress } from './lnurl.js';
import {
  InvoiceBody,
  InvoiceParams,
  InvoiceResult,
  InvoiceStatusResult,
  RecoverBody,
  walletErrors,
} from '../common/schemas.js';
import { accountByKeyHash } from '../wallet/store.js';
import { scheduleExpiryRefund } from '../keys/store.js';
import { setRefundAddress } from './store.js';

const prefixes = ['/v1/balance/lightning', '/lightning'];

export interface LightningRoutesDeps {
  db: Database;
  lightning: Lightning;
  authenticator: Authenticator;
  /** Invoices one client address may ask for per minute (PROXY_REDEEM_LIMIT_PER_MINUTE); 0: no limit. */
  invoicesPerMinute: number;
}

export async function registerLightningRoutes(scope: FastifyInstance, deps: LightningRoutesDeps) {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { db, lightning, authenticator, invoicesPerMinute } = deps;

  // The address is checked before anything else runs, so a mistyped one is never stored.
  // Callback hooks: they run on every request of the node, and an async one costs a promise each time.
  app.addHook('onRequest', (request, _reply, done) => {
    const header = request.headers['refund-lnurl'];
    if (typeof header === 'string') refundAddresses.set(request, parseLightningAddress(header));
    done();
  });
  // Kept once the token named its account (opened by the route itself): the first address stays.
  // Before the answer is sent; an answer its route writes itself (a billed stream takes its reply
  // over, so onSend never runs) keeps it once it is over.
  app.addHook('onSend', (request, _reply, payload, done) => {
    if (!refundAddresses.has(request)) return done(null, payload);
    keepRequestsAddress(request).then(() => done(null, payload), done);
  });
  app.addHook('onResponse', (request, _reply, done) => {
    if (!refundAddresses.has(request)) return done();
    keepRequestsAddress(request).then(
      () => done(),
      (error: unknown) => {
        request.log.error({ err: error }, 'could not keep the Refund-LNURL address');
        done();
      },
    );
  });
  async function keepRequestsAddress(request: FastifyRequest) {
    const address = refundAddresses.get(request);
    if (address === undefined) return;
    refundAddresses.delete(request);
    const token = tokenOf(request);
    if (token !== null) await keepRefundAddress(token, address);
  }
  async function keepRefundAddress(token: string, address: string) {
    const account = await accountByKeyHash(db.kysely, keyHash(apiKeyForToken(token)));
    if (account) {
      await setRefundAddress(db.kysely, account.id, address, Date.now());
      await scheduleExpiryRefund(db.kysely, account.id, Date.now()); // paid to it at the key's expiry
    }
  }

  /** Each invoice costs a quote at the mint: a per-address limit as for token redemptions. */
  async function countInvoice(ip: string) {
    const rule = { limit: invoicesPerMinute, windowMs: 60_000 };
    if (rule.limit === 0) return;
    const hit = await hitRateLimit(db, `proxy-ln-invoice:${ip}`, rule);
    if (hit.allowed) return;
    const seconds = Math.max(1, Math.ceil(hit.retryAfterMs / 1000));
    throw new HttpError(
      429,
      `Too many invoices from this address (at most ${rule.limit} a minute); retry in ${seconds} s`,
      {
        code: 'rate_limit_exceeded',
        type: 'requests',
        headers: { 'Retry-After': String(seconds) },
      },
    );
  }

  for (const prefix of prefixes) {
    const hide = prefix !== prefixes[0];
    app.post(
      `${prefix}/invoice`,
      {
        schema: {
          hide,
          summary: 'A Lightning invoice that opens or tops up an account',
          description:
            "A mint quote (NUT-04) of the node's primary mint: once paid, the node mints its amount and credits " +
            'it, exactly once (`GET …/invoice/{invoice_id}/status`). `create` opens a new account, whose key the ' +
            'status gives once paid; `topup` credits the account `Authorization` names (an API key). Unpaid by ' +
            '`expires_at`, the invoice expires and leaves nothing behind.',
          body: InvoiceBody,
          response: { 200: InvoiceResult, ...walletErrors([400, 401, 422, 429, 502, 503]) },
        },
      },
      async (request) => {
        await countInvoice(request.ip);
        const { amount_sats: amount, purpose } = request.body;
        let accountId: number | null = null;
        if (purpose === 'topup') {
          accountId = (await authenticator.account(request.headers.authorization)).id;
        }
        const invoice = await lightning.invoices.create(amount, purpose, accountId);
        return {
          invoice_id: invoice.id,
          bolt11: invoice.bolt11,
          amount_sats: invoice.amount_sats,
          expires_at: invoice.expires_at,
          payment_hash: invoice.payment_hash,
        };
      },
    );

    app.get(
      `${prefix}/invoice/:invoice_id/status`,
      {
        schema: {
          hide,
          summary: 'The status of a Lightning invoice',
          description:
            '`pending` until the mint says it is paid; then the node mints and credits (once, however many ' +
            'requests or processes ask at once) and answers `paid`, with `api_key` for a `create` invoice. ' +
            '`expired`: unpaid past its expiry, nothing was credited.',
          params: InvoiceParams,
          response: { 200: InvoiceStatusResult, ...walletErrors([404, 502, 503]) },
        },
      },
      async (request) => withoutNullKey(await lightning.invoices.status(request.params.invoice_id)),
    );

    app.post(
      `${prefix}/recover`,
      {
        schema: {
          hide,
          summary: 'Finish a Lightning invoice found by its bolt11',
          description:
            'For a caller who lost the `invoice_id`: the invoice is found by its bolt11 and settled as the ' +
            'status route does.',
          body: RecoverBody,
          response: { 200: InvoiceStatusResult, ...walletErrors([404, 422, 502, 503]) },
        },
      },
      async (request) => withoutNullKey(await lightning.invoices.recover(request.body.bolt11)),
    );
  }
}

/** Requests that carried a valid Refund-LNURL header, with the address. */
const refundAddresses = new WeakMap<FastifyRequest, string>();

/** The token that names the request's account: the bearer, or X-Cashu (Routstr's per-request payment). */
function tokenOf(request: FastifyRequest): string | null {
  const credential = parseAuthorization(request.headers.authorization ?? '');
  if (credential?.kind === 'token') return credential.token;
  const xCashu = request.headers['x-cashu'];
  return typeof xCashu === 'string' && xCashu.trim().startsWith('cashu') ? xCashu.trim() : null;
}

function withoutNullKey<T extends { api_key: string | null }>(status: T) {
  const { api_key: key, ...rest } = status;
  return key === null ? rest : { ...rest, api_key: key };
}
