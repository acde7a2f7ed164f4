// Who is calling: the bearer token's principal, or a 401 that says how to authenticate.
import type { FastifyRequest } from 'fastify';
import { bearerToken, type Identity, type Principal } from '../http/auth.js';
import { HttpError } from '../http/errors.js';

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="quartet"' };

export async function authenticate(identity: Identity, request: FastifyRequest): Promise<Principal> {
  const token = bearerToken(request.headers.authorization);
  if (!token) {
    throw new HttpError(401, 'Authorization: Bearer <token> is required', {
      code: 'unauthenticated',
      headers: CHALLENGE,
    });
  }
  const principal = await identity.fromBearer(token);
  if (!principal) {
    throw new HttpError(401, 'The token is invalid or expired', {
      code: 'invalid_token',
      headers: { 'WWW-Authenticate': 'Bearer realm="quartet", error="invalid_token"' },
    });
  }
  return principal;
}

export function requireAdmin(principal: Principal): void {
  if (principal.role !== 'admin') throw new HttpError(403, 'Only an admin may do this', { code: 'forbidden' });
}

/** Users may act on their own account; admins on any. */
export function requireSelfOrAdmin(principal: Principal, userId: string): void {
  if (principal.role !== 'admin' && principal.userId !== userId) {
    throw new HttpError(403, 'You may only act on your own account', { code: 'forbidden' });
  }
}
