// OneSky authentication: `api_key`, `timestamp` (Unix seconds) and `dev_hash` =
// md5(timestamp + api_secret), in the query string or in the (JSON or multipart) body.
// A bearer token of the users and tasks API is accepted as well. Every failure is a 401 in the OneSky shape.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { bearerToken, type Identity, type Principal } from '../../http/auth.js';
import { HttpError } from '../../http/errors.js';
import { isRecord } from '../common/params.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the quotation service's authentication hook. */
    quotesPrincipal?: Principal;
  }
}

const MAX_FIELD = 256;

/** A credential field from the query, a JSON body, or a multipart field ({value}). */
function field(request: FastifyRequest, name: string): string | undefined {
  const valueIn = (fields: unknown) => (isRecord(fields) ? fields[name] : undefined);
  for (let value of [valueIn(request.query), valueIn(request.body)]) {
    if (Array.isArray(value)) value = value[0];
    if (isRecord(value) && Object.hasOwn(value, 'value')) value = value.value;
    if (typeof value === 'number') value = String(value);
    if (typeof value === 'string' && value !== '') return value.slice(0, MAX_FIELD);
  }
  return undefined;
}

export function md5Hex(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex');
}

/** Constant-time equality of two hex digests of any given length (digests compared, not text). */
function sameHex(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text.toLowerCase()).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

export function makeAuthenticator(identity: Identity, windowS: number, now: () => number = Date.now) {
  return async function authenticate(request: FastifyRequest): Promise<Principal> {
    const token = bearerToken(request.headers.authorization);
    if (token) {
      const principal = await identity.fromBearer(token);
      if (!principal) throw new HttpError(401, 'Invalid or expired bearer token');
      return principal;
    }
    const apiKey = field(request, 'api_key');
    const timestamp = field(request, 'timestamp');
    const devHash = field(request, 'dev_hash');
    if (!apiKey || !timestamp || !devHash) {
      throw new HttpError(
        401,
        'Authentication required: api_key, timestamp and dev_hash (or an Authorization: Bearer token)',
      );
    }
    if (!/^\d{1,12}$/.test(timestamp)) throw new HttpError(401, 'timestamp must be Unix seconds');
    const skew = Math.abs(now() / 1000 - Number(timestamp));
    if (skew > windowS) {
      throw new HttpError(
        401,
        `timestamp is outside the accepted window of ${windowS} seconds; check the client clock`,
      );
    }
    const pair = await identity.fromApiKey(apiKey);
    // Unknown key and wrong hash answer alike, so keys cannot be probed by the message.
    if (!pair || !sameHex(devHash, md5Hex(timestamp + pair.secret))) {
      throw new HttpError(401, 'Invalid api_key or dev_hash');
    }
    return pair.principal;
  };
}
