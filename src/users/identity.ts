// The users service's implementation of the shared Identity (see http/auth.ts): access tokens are looked
// up by their sha256 in the sessions table on every call, so a logout, password reset or
// account deletion takes effect at once in every process sharing the database.
import type { Config } from '../services.js';
import type { Database } from '../db/index.js';
import type { Identity, Principal } from '../http/auth.js';
import { decryptSecret, loadSecretKey } from './secret-key.js';
import { UsersStore } from './store.js';
import { looksLikeToken, tokenHash } from './tokens.js';

export const API_KEY_PATTERN = /^[0-9a-f]{32}$/;

export function createIdentity(db: Database, config: Config): Identity {
  const store = new UsersStore(db);
  return {
    async fromBearer(token) {
      if (!looksLikeToken(token)) return null;
      const row = await store.sessionPrincipal(tokenHash(token));
      return row ? toPrincipal(row) : null;
    },
    async fromApiKey(apiKey) {
      if (!API_KEY_PATTERN.test(apiKey)) return null;
      const { key } = loadSecretKey(config);
      if (!key) return null;
      const row = await store.apiKeyWithOwner(apiKey);
      if (!row) return null;
      const secret = decryptSecret(key, Buffer.from(row.secret_encrypted), apiKey);
      return secret === null ? null : { principal: toPrincipal(row), secret };
    },
  };
}

function toPrincipal(row: { id: number; role: 'user' | 'admin'; email: string }): Principal {
  return { userId: String(row.id), role: row.role, email: row.email };
}
