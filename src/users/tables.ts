// Row types of this service's tables (kept in step with migrations.ts).
// Times are Unix milliseconds; booleans are 0/1 integers; ids are bigint sequences.
import type { Generated } from 'kysely';

export interface UsersTable {
  id: Generated<number>;
  email: string;
  /** Lower-cased email: the unique, case-insensitive login name. */
  email_lower: string;
  username: string;
  username_lower: string;
  first_name: string;
  last_name: string;
  /** `scrypt$N$r$p$salt$hash`, parameters kept with each hash so they can rise. */
  password_hash: string;
  role: 'user' | 'admin';
  created_at: number;
  updated_at: number;
}

export interface UserPhotosTable {
  user_id: number;
  content_type: string;
  bytes: Buffer;
  updated_at: number;
}

export interface SessionsTable {
  /** sha256 of the access token, hex: the token itself is never stored. */
  token_hash: string;
  user_id: number;
  created_at: number;
  expires_at: number;
}

export interface PasswordResetsTable {
  token_hash: string;
  user_id: number;
  created_at: number;
  expires_at: number;
}

export interface MailOutboxTable {
  id: Generated<number>;
  user_id: number | null;
  recipient: string;
  subject: string;
  body: string;
  created_at: number;
  sent_at: number | null;
  last_error: string | null;
}

export interface ApiKeysTable {
  id: Generated<number>;
  user_id: number;
  api_key: string;
  /** version byte, 12-byte IV, 16-byte GCM tag, ciphertext (see apikeys.ts). */
  secret_encrypted: Buffer;
  name: string;
  created_at: number;
}

export interface TasksTable {
  id: Generated<number>;
  user_id: number;
  title: string;
  description: string;
  done: number;
  created_at: number;
  updated_at: number;
}

export interface UsersTables {
  users: UsersTable;
  user_photos: UserPhotosTable;
  sessions: SessionsTable;
  password_resets: PasswordResetsTable;
  mail_outbox: MailOutboxTable;
  api_keys: ApiKeysTable;
  tasks: TasksTable;
}
