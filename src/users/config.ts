// Configuration of the users-and-tasks service, read from the environment (see .env.example
// and docs/tasks.md for every variable and its default).
import { ConfigError, type Env, int, optionalStr, str } from '../env.js';

export interface UsersConfig {
  /** scrypt cost N (a power of two); OWASP's 2^17 by default, lower only for tests. */
  scryptN: number;
  /** Lifetime of an access token issued at login. */
  tokenTtlMs: number;
  /** Lifetime of a password-reset token. */
  resetTtlMs: number;
  /** Largest accepted photo, in bytes. */
  photoMaxBytes: number;
  /** Password checks (login, photo update, password change) per account and per address. */
  loginAccountLimit: number;
  loginAddressLimit: number;
  loginWindowMs: number;
  /** Registrations per client address per hour. */
  registerAddressLimit: number;
  /** Reset requests per hour: per address (answered 429) and mails per account (silent). */
  resetAddressLimit: number;
  resetMailLimit: number;
  /** 32-byte key that encrypts API secrets at rest; see apikeys.ts for when it is absent. */
  secretKey?: Buffer;
  smtpUrl?: string;
  mailFrom: string;
  /** Public address of the service, used in reset mails. */
  publicUrl: string;
  /** Bootstrap admin, created at start when no account has this email. */
  admin?: { email: string; password: string; username: string };
}

export function loadUsersConfig(env: Env): UsersConfig {
  const scryptN = int(env, 'USERS_SCRYPT_N', 2 ** 17, 2 ** 10, 2 ** 20);
  if ((scryptN & (scryptN - 1)) !== 0) {
    throw new ConfigError('USERS_SCRYPT_N', `must be a power of two, got ${scryptN}`);
  }
  const adminEmail = optionalStr(env, 'USERS_ADMIN_EMAIL');
  const adminPassword = optionalStr(env, 'USERS_ADMIN_PASSWORD');
  if (Boolean(adminEmail) !== Boolean(adminPassword)) {
    throw new ConfigError(
      adminEmail ? 'USERS_ADMIN_PASSWORD' : 'USERS_ADMIN_EMAIL',
      'USERS_ADMIN_EMAIL and USERS_ADMIN_PASSWORD go together',
    );
  }
  const smtpUrl = optionalStr(env, 'SMTP_URL');
  if (smtpUrl && !/^smtps?:\/\/[^/\s]+/.test(smtpUrl)) {
    throw new ConfigError('SMTP_URL', 'expected smtp://user:pass@host:587 or smtps://…');
  }
  return {
    scryptN,
    tokenTtlMs: int(env, 'USERS_TOKEN_TTL_SECONDS', 24 * 3600, 60, 365 * 24 * 3600) * 1000,
    resetTtlMs: int(env, 'USERS_RESET_TTL_SECONDS', 30 * 60, 60, 24 * 3600) * 1000,
    photoMaxBytes: int(env, 'USERS_PHOTO_MAX_BYTES', 1024 * 1024, 1024, 50 * 1024 * 1024),
    loginAccountLimit: int(env, 'USERS_LOGIN_ACCOUNT_LIMIT', 10, 1, 100_000),
    loginAddressLimit: int(env, 'USERS_LOGIN_ADDRESS_LIMIT', 100, 1, 1_000_000),
    loginWindowMs: int(env, 'USERS_LOGIN_WINDOW_SECONDS', 15 * 60, 1, 24 * 3600) * 1000,
    registerAddressLimit: int(env, 'USERS_REGISTER_ADDRESS_LIMIT', 20, 1, 1_000_000),
    resetAddressLimit: int(env, 'USERS_RESET_ADDRESS_LIMIT', 20, 1, 1_000_000),
    resetMailLimit: int(env, 'USERS_RESET_MAIL_LIMIT', 3, 1, 1000),
    secretKey: parseSecretKey(optionalStr(env, 'QUARTET_SECRET_KEY')),
    smtpUrl,
    mailFrom: str(env, 'SMTP_FROM', 'quartet <no-reply@localhost>'),
    publicUrl: str(env, 'USERS_PUBLIC_URL', 'http://localhost:3000').replace(/\/+$/, ''),
    admin:
      adminEmail && adminPassword
        ? { email: adminEmail, password: adminPassword, username: str(env, 'USERS_ADMIN_USERNAME', 'admin') }
        : undefined,
  };
}

/** 32 bytes written as 64 hex digits or as base64 (44 characters with padding). */
export function parseSecretKey(value: string | undefined): Buffer | undefined {
  if (value === undefined) return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(value)
    ? Buffer.from(value, 'hex')
    : /^[A-Za-z0-9+/_-]{43}=?$/.test(value)
      ? Buffer.from(value, 'base64')
      : undefined;
  if (!key || key.length !== 32) {
    throw new ConfigError('QUARTET_SECRET_KEY', 'expected 32 bytes as 64 hex digits or base64');
  }
  return key;
}
