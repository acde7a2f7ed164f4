// Opaque random tokens (access, reset, API secrets). Only their sha256 is stored, so a
// database leak yields no usable token, and revocation is a row deletion.
import { createHash, randomBytes } from 'node:crypto';

/** 256 random bits, base64url (43 characters). */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Cheap shape check before any database work. */
export function looksLikeToken(token: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(token);
}
