// Identity shared across services. The users service (src/users) owns people and implements Identity;
// other services only see this interface.

export interface Principal {
  userId: string;
  role: 'user' | 'admin';
  email: string;
}

export interface ApiKeyPair {
  principal: Principal;
  /** The decrypted API secret, needed to check OneSky's dev_hash. */
  secret: string;
}

export interface Identity {
  /** The user of a valid, unexpired users-service access token, else null. */
  fromBearer(token: string): Promise<Principal | null>;
  /** The owner and secret of an active OneSky-style API key, else null. */
  fromApiKey(apiKey: string): Promise<ApiKeyPair | null>;
}

/** The token of an `Authorization: Bearer <token>` header, else null. */
export function bearerToken(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}
