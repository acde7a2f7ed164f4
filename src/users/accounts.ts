// Accounts: registration, password checks with brute-force limits, sessions and the reset
// flow. Used by the HTTP routes, the CLI and the admin bootstrap alike.
import { isForeignKeyViolation } from '../db/errors.js';
import type { Database } from '../db/index.js';
import { HttpError } from '../http/errors.js';
import type { UsersConfig } from './config.js';
import { badInput, validateBody } from './input.js';
import { RegisterBody } from './schemas.js';
import { accountKey, addressKey, limit, resetRateLimit, within } from './limits.js';
import { dummyHash, hashPassword, passwordProblem, verifyPassword } from './passwords.js';
import type { Mail } from './mail.js';
import { type Credentials, type UserRow, UsersStore } from './store.js';
import { looksLikeToken, newToken, tokenHash } from './tokens.js';

const HOUR = 3600_000;

export interface NewUser {
  first_name: string;
  last_name: string;
  email: string;
  password: string;
  username: string;
}

export function publicUser(row: UserRow) {
  return {
    id: String(row.id),
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    username: row.username,
    role: row.role,
    photo: row.has_photo ? `/api/users/getimage?email=${encodeURIComponent(row.email)}` : null,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

export class InvalidCredentials extends HttpError {
  constructor() {
    super(401, 'Email or password is incorrect', { code: 'invalid_credentials' });
  }
}

export class Accounts {
  readonly store: UsersStore;
  private dummy?: Promise<string>;

  constructor(
    private readonly db: Database,
    private readonly config: UsersConfig,
  ) {
    this.store = new UsersStore(db);
  }

  /** The user created, or a 400 (password policy) / 409 (email or username taken). */
  async register(input: NewUser, role: 'user' | 'admin' = 'user'): Promise<UserRow> {
    // The HTTP route has validated already; the CLI and the bootstrap variables have not.
    validateBody(RegisterBody, input);
    const email = input.email.trim();
    const problem = passwordProblem(input.password, { email, username: input.username });
    if (problem) throw badInput([{ loc: ['body', 'password'], msg: problem, type: 'password_policy' }]);
    // Hash before looking for a duplicate: taken and free emails then cost the same time.
    const hash = await hashPassword(input.password, this.config.scryptN);
    const id = await this.store.insertUser({
      email,
      username: input.username,
      first_name: input.first_name.trim(),
      last_name: input.last_name.trim(),
      password_hash: hash,
      role,
    });
    if (id === null) {
      throw new HttpError(409, 'An account with this email or username already exists', { code: 'account_exists' });
    }
    return this.existingUser(id);
  }

  /**
   * Checks an email and password under the per-address and per-account limits. Unknown
   * emails are checked against a dummy hash: same answer, similar time.
   */
  async checkPassword(email: string, password: string, address: string): Promise<Credentials> {
    const window = this.config.loginWindowMs;
    await limit(this.db, addressKey('login', address), { limit: this.config.loginAddressLimit, windowMs: window });
    const account = accountKey('login', email);
    await limit(this.db, account, { limit: this.config.loginAccountLimit, windowMs: window });
    const user = await this.store.credentialsByEmail(email.trim());
    const result = await verifyPassword(password, user?.password_hash ?? (await this.dummyHash()), this.config.scryptN);
    if (!user || !result.ok) throw new InvalidCredentials();
    await resetRateLimit(this.db, account);
    if (result.needsRehash) {
      await this.store.updatePasswordHash(user.id, await hashPassword(password, this.config.scryptN));
    }
    return user;
  }

  /** The user as stored now; a 409 when a concurrent request deleted the account meanwhile. */
  async existingUser(id: number): Promise<UserRow> {
    const user = await this.store.userById(id);
    if (!user) throw new HttpError(409, 'A resource this request refers to was deleted meanwhile');
    return user;
  }

  async login(email: string, password: string, address: string) {
    const user = await this.checkPassword(email, password, address);
    const token = newToken();
    const expiresAt = Date.now() + this.config.tokenTtlMs;
    await this.store.createSession(user.id, tokenHash(token), expiresAt);
    return { token, expiresAt, user: await this.existingUser(user.id) };
  }

  async logout(token: string): Promise<void> {
    await this.store.deleteSession(tokenHash(token));
  }

  /**
   * Issues a reset token and its mail when the account exists and has not had too many mails
   * this hour. Says nothing either way: the caller answers 202 regardless.
   */
  async requestReset(
    email: string,
    makeMail: (email: string, token: string) => Mail,
  ): Promise<{ outboxId: number; mail: Mail } | null> {
    if (
      !(await within(this.db, accountKey('reset-mail', email), { limit: this.config.resetMailLimit, windowMs: HOUR }))
    ) {
      return null;
    }
    const user = await this.store.credentialsByEmail(email.trim());
    if (!user) return null;
    const token = newToken();
    const mail = makeMail(user.email, token);
    const expiresAt = Date.now() + this.config.resetTtlMs;
    try {
      return { outboxId: await this.store.createReset(user.id, tokenHash(token), expiresAt, mail), mail };
    } catch (error) {
      // The account was deleted since it was looked up: as for an unknown email, no mail.
      if (isForeignKeyViolation(error)) return null;
      throw error;
    }
  }

  async limitResetRequests(address: string): Promise<void> {
    await limit(this.db, addressKey('reset', address), { limit: this.config.resetAddressLimit, windowMs: HOUR });
  }

  /** Sets a password with a reset token; ends every session. */
  async resetWithToken(email: string, token: string, password: string, address: string): Promise<void> {
    await this.limitResetRequests(address);
    const problem = passwordProblem(password, { email });
    if (problem) throw badInput([{ loc: ['body', 'password'], msg: problem, type: 'password_policy' }]);
    const hash = await hashPassword(password, this.config.scryptN);
    const ok = looksLikeToken(token) && (await this.store.resetPassword(email.trim(), tokenHash(token), hash));
    if (!ok) throw new HttpError(400, 'The reset token is invalid, used or expired', { code: 'invalid_reset_token' });
  }

  /** Sets a password with the current one; ends every other session. */
  async changeWithCurrent(
    userId: string,
    email: string,
    current: string,
    password: string,
    keepToken: string,
    address: string,
  ): Promise<void> {
    const user = await this.checkPassword(email, current, address);
    if (String(user.id) !== userId) {
      throw new HttpError(403, 'You may only change your own password', { code: 'forbidden' });
    }
    const problem = passwordProblem(password, { email: user.email, username: user.username });
    if (problem) throw badInput([{ loc: ['body', 'password'], msg: problem, type: 'password_policy' }]);
    await this.store.replacePassword(user.id, await hashPassword(password, this.config.scryptN), tokenHash(keepToken));
  }

  async limitRegistrations(address: string): Promise<void> {
    await limit(this.db, addressKey('register', address), { limit: this.config.registerAddressLimit, windowMs: HOUR });
  }

  /** Computes the dummy hash now, so the first unknown-email login costs no more than others. */
  async prepare(): Promise<void> {
    await this.dummyHash();
  }

  private dummyHash(): Promise<string> {
    this.dummy ??= dummyHash(this.config.scryptN);
    return this.dummy;
  }
}
