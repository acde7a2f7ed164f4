// Password hashing (scrypt, parameters stored with each hash) and the password policy of the
// reference: 8 to 128 characters, no truncation, no composition rules, common passwords refused.
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { dictionary } from '@zxcvbn-ts/language-common';

const R = 8;
const P = 1;
const SALT_BYTES = 16;
const KEY_BYTES = 32;
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 128;

function scrypt(password: string, salt: Buffer, N: number, r: number, p: number): Promise<Buffer> {
  // scrypt needs 128·N·r bytes; Node's default cap (32 MiB) is below N=2^17.
  const options: ScryptOptions = { N, r, p, maxmem: 256 * N * r + 1024 * 1024 };
  return new Promise((resolve, reject) =>
    scryptCallback(password, salt, KEY_BYTES, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

/** NFKC, as NIST SP 800-63B advises, so the same password typed on two keyboards matches. */
function normalize(password: string): string {
  return password.normalize('NFKC');
}

export async function hashPassword(password: string, N: number): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await scrypt(normalize(password), salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export interface Verification {
  ok: boolean;
  /** The hash was made with a lower cost than configured now: store a new one. */
  needsRehash: boolean;
}

export async function verifyPassword(password: string, stored: string, currentN: number): Promise<Verification> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return { ok: false, needsRehash: false };
  const [N, r, p] = parts.slice(1, 4).map(Number);
  const expected = Buffer.from(parts[5], 'base64');
  const actual = await scrypt(normalize(password), Buffer.from(parts[4], 'base64'), N, r, p);
  const ok = actual.length === expected.length && timingSafeEqual(actual, expected);
  return { ok, needsRehash: ok && N < currentN };
}

/**
 * A hash of a random password, verified against when an email is unknown so that unknown
 * accounts cost the same time as wrong passwords.
 */
export function dummyHash(N: number): Promise<string> {
  return hashPassword(randomBytes(24).toString('base64'), N);
}

let common: Set<string> | undefined;

/** zxcvbn-ts's ranked list of common passwords (about 49,000, shipped with the package). */
function commonPasswords(): Set<string> {
  common ??= new Set(dictionary['passwords-common']);
  return common;
}

/** The policy's complaint about a new password, or null when it is acceptable. */
export function passwordProblem(password: string, context: { email?: string; username?: string } = {}): string | null {
  const length = [...normalize(password)].length;
  if (length < PASSWORD_MIN) return `Password must have at least ${PASSWORD_MIN} characters`;
  if (length > PASSWORD_MAX) return `Password must have at most ${PASSWORD_MAX} characters`;
  const lower = normalize(password).toLowerCase();
  if (commonPasswords().has(lower)) return 'Password is too common; choose another';
  if (lower === context.email?.toLowerCase() || lower === context.username?.toLowerCase()) {
    return 'Password must not be your email or username';
  }
  return null;
}
