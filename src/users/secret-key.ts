// The key that encrypts API secrets at rest (AES-256-GCM): the quotation API must recover a secret to
// check OneSky's dev_hash, so it cannot be hashed. From QUARTET_SECRET_KEY; without it, on
// SQLite a key is generated once into a file beside the database (mode 600); on PostgreSQL,
// where processes on several machines must share one key, API keys stay disabled until the
// variable is set (a per-machine file would make other machines' keys undecryptable).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Config } from '../services.js';
import { parseSecretKey } from './config.js';

export type SecretKey =
  { key: Buffer; source: 'env' | 'file' | 'generated'; file?: string } | { key: null; source: 'missing' };

const cache = new Map<string, SecretKey>();

export function secretKeyFileFor(config: Config): string | null {
  return config.database.kind === 'sqlite' && config.database.file !== ':memory:'
    ? join(dirname(resolve(config.database.file)), 'quartet-secret.key')
    : null;
}

export function loadSecretKey(config: Config): SecretKey {
  if (config.users.secretKey) return { key: config.users.secretKey, source: 'env' };
  const file = secretKeyFileFor(config);
  if (!file) return { key: null, source: 'missing' };
  let found = cache.get(file);
  if (!found) {
    found = readOrCreate(file);
    cache.set(file, found);
  }
  return found;
}

function readOrCreate(file: string): SecretKey {
  // Written whole to a private name, then linked into place: link fails if the file exists, so
  // processes starting together keep one key, and none can read a half-written file.
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(draft, `${randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
  try {
    linkSync(draft, file);
    return { key: readKey(file), source: 'generated', file };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { key: readKey(file), source: 'file', file };
  } finally {
    unlinkSync(draft);
  }
}

function readKey(file: string): Buffer {
  const key = parseSecretKey(readFileSync(file, 'utf8').trim());
  if (!key) throw new Error(`${file} holds no key`);
  return key;
}

const VERSION = 1;

/** version | iv(12) | tag(16) | ciphertext; `context` (the api_key) is bound as AAD. */
export function encryptSecret(key: Buffer, plaintext: string, context: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
}

/** The plaintext, or null when the blob was not made with this key and context. */
export function decryptSecret(key: Buffer, blob: Buffer, context: string): string | null {
  if (blob.length < 29 || blob[0] !== VERSION) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, blob.subarray(1, 13));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(blob.subarray(13, 29));
    return Buffer.concat([decipher.update(blob.subarray(29)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}
