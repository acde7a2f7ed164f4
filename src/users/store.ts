// The SQL of users, sessions, password resets, photos, the mail outbox and API keys.
// Every multi-row change runs in one writeTransaction (SQLite's write lock from the start); every query is
// parameterized by Kysely.
import { isUniqueViolation } from '../db/errors.js';
import { writeTransaction, type Database, type Executor } from '../db/index.js';

export interface UserRow {
  id: number;
  email: string;
  username: string;
  first_name: string;
  last_name: string;
  role: 'user' | 'admin';
  created_at: number;
  updated_at: number;
  has_photo: boolean;
}

export interface Credentials {
  id: number;
  email: string;
  username: string;
  role: 'user' | 'admin';
  password_hash: string;
}

function usersWithPhoto(db: Executor) {
  return db
    .selectFrom('users')
    .leftJoin('user_photos', 'user_photos.user_id', 'users.id')
    .select([
      'users.id',
      'users.email',
      'users.username',
      'users.first_name',
      'users.last_name',
      'users.role',
      'users.created_at',
      'users.updated_at',
      'user_photos.user_id as photo_owner',
    ]);
}

function toUserRow(row: Omit<UserRow, 'has_photo'> & { photo_owner: number | null }): UserRow {
  const { photo_owner, ...rest } = row;
  return { ...rest, has_photo: photo_owner !== null };
}

export class UsersStore {
  constructor(private readonly database: Database) {}

  private get db() {
    return this.database.kysely;
  }

  /** The new user's id, or null when the email or username is taken. */
  async insertUser(
    user: {
      email: string;
      username: string;
      first_name: string;
      last_name: string;
      password_hash: string;
      role: 'user' | 'admin';
    },
    now = Date.now(),
  ): Promise<number | null> {
    try {
      const row = await this.db
        .insertInto('users')
        .values({
          ...user,
          email_lower: user.email.toLowerCase(),
          username_lower: user.username.toLowerCase(),
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    } catch (error) {
      if (isUniqueViolation(error)) return null;
      throw error;
    }
  }

  async userById(id: number): Promise<UserRow | undefined> {
    const row = await usersWithPhoto(this.db).where('users.id', '=', id).executeTakeFirst();
    return row && toUserRow(row);
  }

  async credentialsByEmail(email: string): Promise<Credentials | undefined> {
    return this.db
      .selectFrom('users')
      .select(['id', 'email', 'username', 'role', 'password_hash'])
      .where('email_lower', '=', email.toLowerCase())
      .executeTakeFirst();
  }

  async listUsers(offset: number, limit: number): Promise<{ rows: UserRow[]; total: number }> {
    const [rows, count] = await Promise.all([
      usersWithPhoto(this.db).orderBy('users.id').offset(offset).limit(limit).execute(),
      this.db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow(),
    ]);
    return { rows: rows.map(toUserRow), total: count.n };
  }

  /** Deletes the user; photo, sessions, resets, mails, API keys and tasks cascade. */
  async deleteUser(id: number): Promise<boolean> {
    const result = await this.db.deleteFrom('users').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async updatePasswordHash(userId: number, hash: string, now = Date.now()): Promise<void> {
    await this.db.updateTable('users').set({ password_hash: hash, updated_at: now }).where('id', '=', userId).execute();
  }

  /**
   * Sets a new password and ends every session (but `keepSession`) and every pending reset
   * token, all or nothing.
   */
  async replacePassword(userId: number, hash: string, keepSession?: string, now = Date.now()): Promise<void> {
    await writeTransaction(this.database, (trx) => replacePasswordIn(trx, userId, hash, keepSession, now));
  }

  /**
   * Consumes a reset token of the account `email` and sets the new password, in one
   * transaction: a token works once, and never for another account. False when invalid.
   */
  async resetPassword(email: string, resetTokenHash: string, hash: string, now = Date.now()): Promise<boolean> {
    return writeTransaction(this.database, async (trx) => {
      const used = await trx
        .deleteFrom('password_resets')
        .where('token_hash', '=', resetTokenHash)
        .returning(['user_id', 'expires_at'])
        .executeTakeFirst();
      if (!used || used.expires_at <= now) return false;
      const owner = await trx
        .selectFrom('users')
        .select('id')
        .where('id', '=', used.user_id)
        .where('email_lower', '=', email.toLowerCase())
        .executeTakeFirst();
      if (!owner) return false;
      await replacePasswordIn(trx, owner.id, hash, undefined, now);
      return true;
    });
  }

  /** Stores a reset token and the mail that carries it, together. */
  async createReset(
    userId: number,
    resetTokenHash: string,
    expiresAt: number,
    mail: { recipient: string; subject: string; body: string },
    now = Date.now(),
  ): Promise<number> {
    return writeTransaction(this.database, async (trx) => {
      await trx
        .insertInto('password_resets')
        .values({ token_hash: resetTokenHash, user_id: userId, created_at: now, expires_at: expiresAt })
        .execute();
      const row = await trx
        .insertInto('mail_outbox')
        .values({ user_id: userId, ...mail, created_at: now, sent_at: null, last_error: null })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    });
  }

  async markMail(id: number, outcome: { sentAt: number } | { error: string }): Promise<void> {
    await this.db
      .updateTable('mail_outbox')
      .set(
        'sentAt' in outcome
          ? { sent_at: outcome.sentAt, last_error: null }
          : { last_error: outcome.error.slice(0, 500) },
      )
      .where('id', '=', id)
      .execute();
  }

  async outbox(includeSent: boolean) {
    let query = this.db.selectFrom('mail_outbox').selectAll().orderBy('id');
    if (!includeSent) query = query.where('sent_at', 'is', null);
    return query.execute();
  }

  async createSession(userId: number, sessionTokenHash: string, expiresAt: number, now = Date.now()): Promise<void> {
    await writeTransaction(this.database, async (trx) => {
      // Tidy this user's expired sessions while we are here; expiry is enforced on read anyway.
      await trx.deleteFrom('sessions').where('user_id', '=', userId).where('expires_at', '<=', now).execute();
      await trx
        .insertInto('sessions')
        .values({ token_hash: sessionTokenHash, user_id: userId, created_at: now, expires_at: expiresAt })
        .execute();
    });
  }

  /** Drops expired sessions and reset codes, and mails older than `mailAgeMs`; for tidiness only. */
  async pruneExpired(mailAgeMs: number, now = Date.now()): Promise<void> {
    await this.db.deleteFrom('sessions').where('expires_at', '<=', now).execute();
    await this.db.deleteFrom('password_resets').where('expires_at', '<=', now).execute();
    await this.db
      .deleteFrom('mail_outbox')
      .where('created_at', '<=', now - mailAgeMs)
      .execute();
  }

  async sessionPrincipal(sessionTokenHash: string, now = Date.now()) {
    return this.db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .select(['users.id', 'users.role', 'users.email'])
      .where('sessions.token_hash', '=', sessionTokenHash)
      .where('sessions.expires_at', '>', now)
      .executeTakeFirst();
  }

  async deleteSession(sessionTokenHash: string): Promise<void> {
    await this.db.deleteFrom('sessions').where('token_hash', '=', sessionTokenHash).execute();
  }

  async setPhoto(userId: number, contentType: string, bytes: Buffer, now = Date.now()): Promise<void> {
    await this.db
      .insertInto('user_photos')
      .values({ user_id: userId, content_type: contentType, bytes, updated_at: now })
      .onConflict((oc) => oc.column('user_id').doUpdateSet({ content_type: contentType, bytes, updated_at: now }))
      .execute();
  }

  async deletePhoto(userId: number): Promise<void> {
    await this.db.deleteFrom('user_photos').where('user_id', '=', userId).execute();
  }

  async photoByEmail(email: string) {
    return this.db
      .selectFrom('user_photos')
      .innerJoin('users', 'users.id', 'user_photos.user_id')
      .select(['user_photos.content_type', 'user_photos.bytes', 'user_photos.updated_at'])
      .where('users.email_lower', '=', email.toLowerCase())
      .executeTakeFirst();
  }

  /**
   * Inserts a key pair unless the user already has `max`; the count and the insert share a
   * transaction so concurrent requests cannot exceed it on SQLite (PostgreSQL may overshoot
   * by the number of simultaneous requests, which is harmless).
   */
  async insertApiKey(
    row: { user_id: number; api_key: string; secret_encrypted: Buffer; name: string; created_at: number },
    max: number,
  ): Promise<boolean> {
    // The user's row is locked first (PostgreSQL; SQLite's begin immediate locks the database),
    // so two requests at once cannot both count max - 1 pairs and both insert.
    return writeTransaction(this.database, async (trx) => {
      let owner = trx.selectFrom('users').select('id').where('id', '=', row.user_id);
      if (this.database.dialect === 'postgres') owner = owner.forUpdate();
      await owner.execute();
      const count = await trx
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('user_id', '=', row.user_id)
        .executeTakeFirstOrThrow();
      if (count.n >= max) return false;
      await trx.insertInto('api_keys').values(row).execute();
      return true;
    });
  }

  async apiKeysOf(userId: number) {
    return this.db
      .selectFrom('api_keys')
      .select(['api_key', 'name', 'created_at'])
      .where('user_id', '=', userId)
      .orderBy('id')
      .execute();
  }

  async deleteApiKey(userId: number, apiKey: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('api_keys')
      .where('user_id', '=', userId)
      .where('api_key', '=', apiKey)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async apiKeyWithOwner(apiKey: string) {
    return this.db
      .selectFrom('api_keys')
      .innerJoin('users', 'users.id', 'api_keys.user_id')
      .select(['api_keys.secret_encrypted', 'users.id', 'users.role', 'users.email'])
      .where('api_keys.api_key', '=', apiKey)
      .executeTakeFirst();
  }
}

async function replacePasswordIn(
  trx: Executor,
  userId: number,
  hash: string,
  keepSession: string | undefined,
  now: number,
) {
  await trx.updateTable('users').set({ password_hash: hash, updated_at: now }).where('id', '=', userId).execute();
  let sessions = trx.deleteFrom('sessions').where('user_id', '=', userId);
  if (keepSession) sessions = sessions.where('token_hash', '!=', keepSession);
  await sessions.execute();
  await trx.deleteFrom('password_resets').where('user_id', '=', userId).execute();
}
