// Who may operate the node, and how they prove it (docs/proxy-operator.md, "Signing in"):
// - the operator's password: PROXY_ADMIN_PASSWORD's scrypt hash, until PATCH /admin/api/password
//   stores a new one in the database (which then wins, in every process);
// - bearer tokens of the operator API, as Routstr's node hands them out: a session token from
//   POST /admin/api/login (PROXY_ADMIN_SESSION_HOURS) or a named CLI token (optional expiry,
//   revocable); only their sha256 is stored;
// - the bearer token of an admin of the users and tasks API;
// - the admin page's cookie session (../admin/admin.ts), so its scripts can call the API.
// Logins are rate-limited per address and overall, in the database (every process counts).
import { createHash, randomBytes, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { writeTransaction, type Database } from '../../db/index.js';
import type { Identity } from '../../http/auth.js';
import { hitRateLimit, resetRateLimit } from '../../http/rate-limit.js';
import { SCRYPT_PARAMS, type AdminPasswordHash } from '../common/forward-config.js';
import { recordAudit } from './audit.js';
import {
  adminSessionByIdHash,
  cliTokenById,
  deleteAdminSession,
  deleteExpiredAdminSessions,
  deleteExpiredOperatorTokens,
  deleteOperatorToken,
  deleteOperatorTokenByHash,
  deleteSessionTokens,
  insertAdminSession,
  insertOperatorToken,
  listCliTokens,
  operatorTokenByHash,
  storedOperatorPassword,
  storeOperatorPassword,
  touchOperatorToken,
} from './store.js';

const scrypt = promisify(scryptCallback) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: object,
) => Promise<Buffer>;

/** As PROXY_ADMIN_PASSWORD must be (../common/forward-config.ts); Routstr asks for 8. */
export const MIN_PASSWORD_LENGTH = 12;
/** scrypt's cost is the caller's to choose by the password's length: bounded. */
const MAX_PASSWORD_LENGTH = 1024;
const LOGIN_LIMITS = [
  { scope: 'ip', limit: 10, windowMs: 15 * 60_000 },
  { scope: 'all', limit: 100, windowMs: 15 * 60_000 },
] as const;
/** A token's last use is written at most this often (a write per request would cost every call). */
const TOUCH_EVERY_MS = 60_000;

export const loginLimitKey = (scope: 'ip' | 'all', ip: string) =>
  scope === 'ip' ? `proxy-admin-login:${ip}` : 'proxy-admin-login:*';

export const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');
const newToken = () => randomBytes(32).toString('base64url');

export type LoginOutcome =
  | { kind: 'ok'; token: string; expiresInSeconds: number }
  | { kind: 'wrong-password' }
  | { kind: 'not-configured' }
  | { kind: 'rate-limited'; retryAfterMs: number };

/** A login attempt's outcome before any token is made. */
export type LoginAttempt = { kind: 'ok' } | Exclude<LoginOutcome, { kind: 'ok' }>;

export class OperatorAuth {
  constructor(
    private readonly db: Database,
    private readonly envPassword: AdminPasswordHash | null,
    private readonly sessionMs: number,
    private readonly identity: Identity,
  ) {}

  /** Whether a password can sign in at all (set in the environment or through the API). */
  async passwordConfigured(): Promise<boolean> {
    return this.envPassword !== null || (await storedOperatorPassword(this.db.kysely)) !== undefined;
  }

  /** Compares in constant time against the stored password, else PROXY_ADMIN_PASSWORD's. */
  async verifyPassword(password: string): Promise<boolean> {
    const stored = await storedOperatorPassword(this.db.kysely);
    const expected = stored
      ? { salt: Buffer.from(stored.salt, 'hex'), hash: Buffer.from(stored.hash, 'hex') }
      : this.envPassword;
    if (!expected || password.length > MAX_PASSWORD_LENGTH) return false;
    const { N, r, p, keylen } = SCRYPT_PARAMS;
    const candidate = await scrypt(password, expected.salt, keylen, { N, r, p, maxmem: 64 * 1024 * 1024 });
    return candidate.length === expected.hash.length && timingSafeEqual(candidate, expected.hash);
  }

  /**
   * A login attempt from `ip` (the API's and the page's): counted before the password is hashed, so
   * that guessing is bounded in CPU too; a right password clears the address's count, so an operator's
   * scripts that log in often are not locked out by their own successes.
   */
  async attemptLogin(password: string, ip: string): Promise<LoginAttempt> {
    if (!(await this.passwordConfigured())) return { kind: 'not-configured' };
    for (const rule of LOGIN_LIMITS) {
      const hit = await hitRateLimit(this.db, loginLimitKey(rule.scope, ip), rule);
      if (!hit.allowed) return { kind: 'rate-limited', retryAfterMs: hit.retryAfterMs };
    }
    if (!(await this.verifyPassword(password))) return { kind: 'wrong-password' };
    await resetRateLimit(this.db, loginLimitKey('ip', ip));
    return { kind: 'ok' };
  }

  /** POST /admin/api/login: the password for a session token. */
  async login(password: string, ip: string): Promise<LoginOutcome> {
    const outcome = await this.attemptLogin(password, ip);
    if (outcome.kind !== 'ok') return outcome;
    const token = newToken();
    const now = Date.now();
    await deleteExpiredOperatorTokens(this.db.kysely, now);
    await insertOperatorToken(this.db.kysely, {
      kind: 'session',
      name: 'login',
      token_hash: hashSecret(token),
      preview: preview(token),
      created_by: 'password',
      created_at: now,
      last_used_at: null,
      expires_at: now + this.sessionMs,
    });
    return { kind: 'ok', token, expiresInSeconds: Math.floor(this.sessionMs / 1000) };
  }

  async logout(token: string): Promise<void> {
    await deleteOperatorTokenByHash(this.db.kysely, hashSecret(token));
  }

  /** The actor of a bearer token (an operator token or a users-API admin's), else null. */
  async actorOfBearer(token: string): Promise<string | null> {
    const now = Date.now();
    const row = await operatorTokenByHash(this.db.kysely, hashSecret(token));
    if (row) {
      if (row.expires_at !== null && Number(row.expires_at) <= now) return null;
      if (row.last_used_at === null || now - Number(row.last_used_at) > TOUCH_EVERY_MS) {
        await touchOperatorToken(this.db.kysely, row.id, now);
      }
      return row.kind === 'cli' ? `cli-token:${row.id}:${row.name}` : 'password';
    }
    const principal = await this.identity.fromBearer(token);
    return principal?.role === 'admin' ? `user:${principal.userId}` : null;
  }

  /**
   * PATCH /admin/api/password: the current password, then the new one is stored (hashed) and every
   * session token ends; CLI tokens stay (they were made to outlive sessions). False: wrong current.
   */
  async changePassword(current: string, next: string, actor: string): Promise<boolean> {
    if (!(await this.verifyPassword(current))) return false;
    const salt = randomBytes(16);
    const { N, r, p, keylen } = SCRYPT_PARAMS;
    const hash = await scrypt(next, salt, keylen, { N, r, p, maxmem: 64 * 1024 * 1024 });
    await writeTransaction(this.db, async (trx) => {
      const now = Date.now();
      await storeOperatorPassword(trx, salt.toString('hex'), hash.toString('hex'), now);
      await deleteSessionTokens(trx);
      await recordAudit(trx, { actor, action: 'password.update' }, now);
    });
    return true;
  }

  async listCliTokens() {
    const rows = await listCliTokens(this.db.kysely);
    return rows.map((row) => ({
      id: String(row.id),
      name: row.name,
      token_preview: row.preview,
      created_by: row.created_by,
      created_at: seconds(row.created_at),
      last_used_at: seconds(row.last_used_at),
      expires_at: seconds(row.expires_at),
    }));
  }

  /** A named long-lived token; the token itself is in this answer only. */
  async createCliToken(name: string, expiresInDays: number | null, actor: string) {
    const token = newToken();
    const now = Date.now();
    const expiresAt = expiresInDays !== null && expiresInDays > 0 ? now + expiresInDays * 86_400_000 : null;
    const id = await writeTransaction(this.db, async (trx) => {
      const id = await insertOperatorToken(trx, {
        kind: 'cli',
        name,
        token_hash: hashSecret(token),
        preview: preview(token),
        created_by: actor,
        created_at: now,
        last_used_at: null,
        expires_at: expiresAt,
      });
      await recordAudit(
        trx,
        { actor, action: 'cli_token.create', target: String(id), after: { name, expires_at: expiresAt } },
        now,
      );
      return id;
    });
    return { id: String(id), name, token, created_at: seconds(now), expires_at: seconds(expiresAt) };
  }

  /** False when there is no such CLI token. */
  async revokeCliToken(id: number, actor: string): Promise<boolean> {
    return writeTransaction(this.db, async (trx) => {
      const row = await cliTokenById(trx, id);
      if (!row) return false;
      await deleteOperatorToken(trx, id);
      await recordAudit(trx, {
        actor,
        action: 'cli_token.revoke',
        target: String(id),
        before: { name: row.name, token_preview: row.preview },
      });
      return true;
    });
  }

  // The admin page's cookie sessions, with the CSRF secret their forms carry.

  async createPageSession(principal: string): Promise<{ id: string; csrf: string; expiresAt: number }> {
    const id = newToken();
    const csrf = newToken();
    const now = Date.now();
    await deleteExpiredAdminSessions(this.db.kysely, now);
    await insertAdminSession(this.db.kysely, {
      id_hash: hashSecret(id),
      csrf_token: csrf,
      principal,
      created_at: now,
      expires_at: now + this.sessionMs,
    });
    return { id, csrf, expiresAt: now + this.sessionMs };
  }

  async findPageSession(id: string): Promise<{ principal: string; csrf: string } | null> {
    const row = await adminSessionByIdHash(this.db.kysely, hashSecret(id));
    if (!row || Number(row.expires_at) <= Date.now()) return null;
    return { principal: row.principal, csrf: row.csrf_token };
  }

  async endPageSession(id: string): Promise<void> {
    await deleteAdminSession(this.db.kysely, hashSecret(id));
  }

  get pageSessionMs(): number {
    return this.sessionMs;
  }
}

/** Routstr's `token_preview`. */
const preview = (token: string) => `${token.slice(0, 8)}...${token.slice(-4)}`;

/** Unix seconds, as Routstr's answers carry times. */
export function seconds(ms: number): number;
export function seconds(ms: number | null): number | null;
export function seconds(ms: number | null): number | null {
  return ms === null ? null : Math.floor(Number(ms) / 1000);
}
