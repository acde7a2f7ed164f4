// OneSky-style key pairs for the quotation API: a public api_key and an api_secret that it needs in
// clear to check dev_hash = md5(timestamp + api_secret), hence encrypted (not hashed) at rest.
import { randomBytes } from 'node:crypto';
import type { Config } from '../services.js';
import { HttpError } from '../http/errors.js';
import { encryptSecret, loadSecretKey } from './secret-key.js';
import type { UsersStore } from './store.js';

export const MAX_API_KEYS_PER_USER = 10;

export async function createApiKey(store: UsersStore, config: Config, userId: number, name: string | undefined) {
  const { key } = loadSecretKey(config);
  if (!key) {
    throw new HttpError(
      503,
      'API keys are disabled: set QUARTET_SECRET_KEY (shared by every process on this database)',
      { code: 'secret_key_missing' },
    );
  }
  const apiKey = randomBytes(16).toString('hex');
  const apiSecret = randomBytes(32).toString('hex');
  const createdAt = Date.now();
  const label = name?.trim() || `key ${new Date(createdAt).toISOString().slice(0, 10)}`;
  const stored = await store.insertApiKey(
    {
      user_id: userId,
      api_key: apiKey,
      secret_encrypted: encryptSecret(key, apiSecret, apiKey),
      name: label,
      created_at: createdAt,
    },
    MAX_API_KEYS_PER_USER,
  );
  if (!stored) {
    throw new HttpError(409, `At most ${MAX_API_KEYS_PER_USER} key pairs per user; delete one first`, {
      code: 'too_many_api_keys',
    });
  }
  return { api_key: apiKey, api_secret: apiSecret, name: label, created_at: new Date(createdAt).toISOString() };
}
