// The change of an X-Cashu payment: after the request, the account the token names gives its
// whole available balance back as a token (docs/proxy-billing.md). If the mint cannot make it now,
// the balance stays with that account, refundable later with `Authorization: Bearer <the same
// token>` at POST /v1/wallet/refund.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Database } from '../../db/index.js';
import { HttpError } from '../../http/errors.js';
import { availableMsat } from './store.js';
import type { NodeWallet } from './wallet.js';

/**
 * Who gets change: the payer of a request (held or not yet reserved). A forwarded request's
 * exchange is one (forward/billed-exchange.ts); spelled out here, as the wallet sits below forwarding.
 */
export interface ChangeFor {
  deps: { db: Database; wallet: NodeWallet };
  payer: { accountId: number; payment: 'key' | 'x-cashu' };
  request: FastifyRequest;
}

export interface ChangeFields {
  change?: string;
  change_msat?: number;
  change_error?: string;
}

/** The change as fields of the answer's `cost` object (nothing for payments by key). */
export async function changeFields({ deps, payer, request }: ChangeFor): Promise<ChangeFields> {
  if (payer.payment !== 'x-cashu') return {};
  const available = await availableMsat(deps.db.kysely, payer.accountId);
  if (available === null || available < 1000) return {};
  try {
    const refund = await deps.wallet.refund(payer.accountId);
    return { change: refund.token, change_msat: refund.msats };
  } catch (error) {
    request.log.warn({ err: error }, "X-Cashu change could not be issued; it stays with the token's account");
    return {
      change_error:
        `${(error as Error).message}. The change stays with this token's account: refund it with ` +
        'Authorization: Bearer <the same token> at POST /v1/wallet/refund',
    };
  }
}

/** Puts the change token in the X-Cashu header; returns the fields left for the body. */
export async function setChangeHeader(
  reply: FastifyReply,
  changeFor: ChangeFor,
): Promise<Omit<ChangeFields, 'change'>> {
  const { change, ...rest } = await changeFields(changeFor);
  if (change) reply.header('x-cashu', change);
  if (rest.change_error) reply.header('x-cashu-change-error', rest.change_error.replace(/[^\x20-\x7e]/g, ' '));
  return rest;
}

/** An error answer for an X-Cashu payment still returns the change (here: the whole payment). */
export async function withChange(changeFor: ChangeFor, error: HttpError): Promise<HttpError> {
  const fields = await changeFields(changeFor);
  if (!fields.change) return error;
  return new HttpError(error.status, error.message, {
    ...error.options,
    headers: { ...error.options.headers, 'x-cashu': fields.change },
  });
}
