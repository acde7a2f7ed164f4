// Forward-only migrations of this service; never edit one that has shipped, add a new one.
// Every table that belongs to a user cascades on its deletion, so deleting a user removes
// their photo, tokens, reset tokens, mails, API keys and tasks in one statement.
import { sql } from 'kysely';
import type { Migration } from '../db/migrate.js';

export const usersMigrations: Migration[] = [
  {
    name: '1000_users',
    async up(db, t) {
      await t
        .autoId(db.schema.createTable('users'))
        .addColumn('email', 'text', (col) => col.notNull())
        .addColumn('email_lower', 'text', (col) => col.notNull().unique())
        .addColumn('username', 'text', (col) => col.notNull())
        .addColumn('username_lower', 'text', (col) => col.notNull().unique())
        .addColumn('first_name', 'text', (col) => col.notNull())
        .addColumn('last_name', 'text', (col) => col.notNull())
        .addColumn('password_hash', 'text', (col) => col.notNull())
        .addColumn('role', 'text', (col) => col.notNull().check(sql`role in ('user', 'admin')`))
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('updated_at', t.bigint, (col) => col.notNull())
        .execute();
      await db.schema
        .createTable('user_photos')
        .addColumn('user_id', t.bigint, (col) => col.primaryKey().references('users.id').onDelete('cascade'))
        .addColumn('content_type', 'text', (col) => col.notNull())
        .addColumn('bytes', t.bytes, (col) => col.notNull())
        .addColumn('updated_at', t.bigint, (col) => col.notNull())
        .execute();
      await db.schema
        .createTable('sessions')
        .addColumn('token_hash', 'text', (col) => col.primaryKey())
        .addColumn('user_id', t.bigint, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('expires_at', t.bigint, (col) => col.notNull())
        .execute();
      await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute();
      await db.schema
        .createTable('password_resets')
        .addColumn('token_hash', 'text', (col) => col.primaryKey())
        .addColumn('user_id', t.bigint, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('expires_at', t.bigint, (col) => col.notNull())
        .execute();
      await db.schema.createIndex('password_resets_user').on('password_resets').column('user_id').execute();
      await t
        .autoId(db.schema.createTable('mail_outbox'))
        .addColumn('user_id', t.bigint, (col) => col.references('users.id').onDelete('cascade'))
        .addColumn('recipient', 'text', (col) => col.notNull())
        .addColumn('subject', 'text', (col) => col.notNull())
        .addColumn('body', 'text', (col) => col.notNull())
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('sent_at', t.bigint)
        .addColumn('last_error', 'text')
        .execute();
      await db.schema.createIndex('mail_outbox_user').on('mail_outbox').column('user_id').execute();
      await t
        .autoId(db.schema.createTable('api_keys'))
        .addColumn('user_id', t.bigint, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('api_key', 'text', (col) => col.notNull().unique())
        .addColumn('secret_encrypted', t.bytes, (col) => col.notNull())
        .addColumn('name', 'text', (col) => col.notNull())
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .execute();
      await db.schema.createIndex('api_keys_user').on('api_keys').column('user_id').execute();
    },
  },
  {
    name: '1001_tasks',
    async up(db, t) {
      await t
        .autoId(db.schema.createTable('tasks'))
        .addColumn('user_id', t.bigint, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('title', 'text', (col) => col.notNull())
        .addColumn('description', 'text', (col) => col.notNull())
        .addColumn('done', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('created_at', t.bigint, (col) => col.notNull())
        .addColumn('updated_at', t.bigint, (col) => col.notNull())
        .execute();
      await db.schema.createIndex('tasks_user_id').on('tasks').columns(['user_id', 'id']).execute();
    },
  },
];
