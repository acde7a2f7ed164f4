// Who pays for a billed request: the account of an API key (or a token as bearer) in
// Authorization, or of a Cashu token in X-Cashu; and the 402 answers when nobody can
// (docs/proxy-billing.md).
import { PaymentRequest } from '@cashu/cashu-ts';
import type { FastifyRequest } from 'fastify';
import { HttpError } from '../../http/errors.js';
import type { ForwardDeps } from './forward-deps.js';
import type { ReservationPlanning } from '../billing/metering.js';
import type { KeyOwner } from '../keys/accounts.js';
import { looksLikeToken, tokenError } from '../wallet/tokens.js';

export interface Payer {
  accountId: number;
  /** The hash of the account's key (the authenticator's cache entry, see ../keys/accounts.ts). */
  keyHash: string;
  payment: 'key' | 'x-cashu';
  /** A child key paying from the account (its limit applies); null for the account's own key. */
  childKeyId: number | null;
}

/**
 * The account paying. With neither header, 402 with a NUT-18 payment request for what the
 * request would cost (`planned`, computed only then).
 */
export async function identifyPayer(
  deps: ForwardDeps,
  request: FastifyRequest,
  planned: () => ReservationPlanning,
): Promise<Payer> {
  const xCashu = request.headers['x-cashu'];
  if (typeof xCashu === 'string' && xCashu.trim()) {
    const token = xCashu.trim();
    if (!looksLikeToken(token)) {
      throw tokenError('invalid_cashu_token', 'The X-Cashu header must hold a Cashu token (cashuA… or cashuB…)');
    }
    // The token is redeemed once into the account it names ("sk-" + sha256 of the token), the
    // same as a token used as bearer: a repeated token finds that account and its remainder.
    await deps.redemptionLimit.countToken(request.ip, token);
    return payerOf(await deps.authenticator.accountId({ kind: 'token', token }), 'x-cashu');
  }
  const authorization = request.headers.authorization ?? anthropicKey(request);
  if (authorization === undefined) throw paymentRequired(deps.wallet.mints, planned());
  return payerOf(await deps.authenticator.accountId(authorization), 'key');
}

/** Built field by field: a spread of the owner showed in profiles, once per billed request. */
function payerOf({ accountId, keyHash, childKeyId }: KeyOwner, payment: Payer['payment']): Payer {
  return { accountId, keyHash, childKeyId, payment };
}

/** Anthropic's clients (Claude Code with ANTHROPIC_API_KEY) send the key as `x-api-key`. */
function anthropicKey(request: FastifyRequest): string | undefined {
  const key = request.headers['x-api-key'];
  return typeof key === 'string' && key.trim() ? `Bearer ${key.trim()}` : undefined;
}

function paymentRequired(mints: string[], planned: ReservationPlanning): HttpError {
  const sats = Math.ceil(planned.fullMsat / 1000);
  // NUT-18 payment request (as NUT-24 uses it): amount in sat, the mints this node trusts.
  const requestText = new PaymentRequest(
    undefined,
    undefined,
    sats,
    'sat',
    mints,
    'quartet proxy request',
    true,
  ).toEncodedRequest();
  return new HttpError(
    402,
    `Payment required: this request costs at most ${planned.fullMsat} msat (${sats} sat) and at least ` +
      `${planned.minimumMsat} msat; send Authorization: Bearer sk-… (an API key of this node, see ` +
      `/v1/wallet/topup) or a Cashu token of ${mints.join(', ')} in the X-Cashu header (change is returned in ` +
      'the X-Cashu response header)',
    {
      code: 'payment_required',
      type: 'insufficient_quota',
      headers: { 'x-cashu': requestText },
      extra: { price_msat: planned.fullMsat, minimum_msat: planned.minimumMsat },
    },
  );
}

/**
 * 402: the account's available balance cannot cover the request's minimum. For an X-Cashu token,
 * Routstr's type for a token below the model's minimum (its clients then send a bigger one).
 */
export function insufficientBalance(
  planned: ReservationPlanning,
  availableMsat: number,
  payment: Payer['payment'],
): HttpError {
  const { minimumMsat, fullMsat } = planned;
  const available = Math.max(0, availableMsat);
  return new HttpError(
    402,
    `Insufficient balance: this request needs at least ${minimumMsat} msat (${fullMsat} msat for its full ` +
      `max_tokens) and ${available} msat are available`,
    {
      code: 'insufficient_balance',
      type: payment === 'x-cashu' ? 'minimum_balance_required' : 'insufficient_quota',
      extra: { price_msat: fullMsat, minimum_msat: minimumMsat, available_msat: available },
    },
  );
}
