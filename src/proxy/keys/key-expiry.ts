// Key-Expiry-Time (issue 14, docs/proxy-wallet.md#key-expiry-time): a Cashu token sent as the
// bearer with this header (unix seconds) sets when the account it opens expires. From then on the
// account pays for nothing (401 invalid_api_key, checked in the billing transaction as well) while
// its balance stays claimable by POST /v1/balance/refund, or is paid to the account's Refund-LNURL
// address by the expiry job (../lightning/expiry-refunds.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { type Authenticator, parseAuthorization } from './accounts.js';
import { scheduleExpiryRefund, setAccountExpiry } from './store.js';

/** The latest expiry accepted: 9999-12-31 (its milliseconds stay exact integers). */
const MAX_EXPIRY_SECONDS = 253_402_300_799;

/** Key-Expiry-Time as unix milliseconds; null when absent; 400 when it is not a future unix time. */
export function keyExpiryOf(request: FastifyRequest, now: number): number | null {
  const header = request.headers['key-expiry-time'];
  if (header === undefined) return null;
  const text = (Array.isArray(header) ? header.join(',') : header).trim();
  const value = /^\d{1,12}$/.test(text) ? Number(text) : NaN;
  if (!(value * 1000 > now && value <= MAX_EXPIRY_SECONDS)) {
    throw new HttpError(400, 'Key-Expiry-Time must be a future time in unix seconds', {
      code: 'invalid_key_expiry_time',
      type: 'invalid_request_error',
    });
  }
  return value * 1000;
}

/**
 * Before any route runs: a token bearer with Key-Expiry-Time opens its account (as the route
 * would) and the expiry is set, once: an account that has one keeps it. With an `sk-` key the
 * header changes nothing (Routstr's node lets any request move the expiry; here only the first use
 * with the token can set it).
 */
export function registerKeyExpiry(app: FastifyInstance, deps: KeyExpiryDeps) {
  // A callback hook: it runs on every request, and an async one costs a promise each time.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.headers['key-expiry-time'] === undefined) return done();
    applyKeyExpiry(request, deps).then(() => done(), done);
  });
}

interface KeyExpiryDeps {
  db: Database;
  authenticator: Authenticator;
}

async function applyKeyExpiry(request: FastifyRequest, deps: KeyExpiryDeps) {
  const credential = parseAuthorization(request.headers.authorization ?? '');
  if (credential?.kind !== 'token') return;
  const expiresAt = keyExpiryOf(request, Date.now());
  if (expiresAt === null) return;
  const { accountId, keyHash } = await deps.authenticator.accountId(credential);
  if (await setAccountExpiry(deps.db.kysely, accountId, expiresAt)) {
    deps.authenticator.forget(keyHash);
    await scheduleExpiryRefund(deps.db.kysely, accountId, Date.now());
  }
}
