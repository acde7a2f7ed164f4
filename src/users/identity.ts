// Area B's implementation of the shared Identity (see http/auth.ts).
// Placeholder until area B lands: nobody is authenticated.
import type { Config } from '../config.js';
import type { Database } from '../db/index.js';
import type { Identity } from '../http/auth.js';

export function createIdentity(_db: Database, _config: Config): Identity {
  return {
    fromBearer: async () => null,
    fromApiKey: async () => null,
  };
}
