// Accounts and the `Authorization` header of the proxy node. A caller is an account, named by an API
// key `sk-…` (only its sha256 is stored) or by a Cashu token: a token used as the bearer is
// redeemed once into a new account whose key is "sk-" + sha256(token), so the same token string
// keeps naming the same account, and its owner can switch to that key.
import { HttpError } from '../../http/errors.js';
import type { Database } from '../../db/index.js';
import { type Account, accountById, accountByKeyHash, type Executor } from '../wallet/store.js';
import { childKeyByHash, type ChildKeyRow } from './store.js';
import { looksLikeToken, sha256Hex } from '../wallet/tokens.js';
import type { NodeWallet } from '../wallet/wallet.js';

export type { Account } from '../wallet/store.js';

export const AUTHORIZATION_FORMS =
  "Send 'Authorization: Bearer sk-…' (an API key of this node) or 'Authorization: Bearer cashuA…' / 'Bearer " +
  "cashuB…' (a Cashu token, redeemed once into an account)";

const API_KEY = /^sk-[A-Za-z0-9_-]{1,200}$/;
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

export type Credential = { kind: 'key'; key: string } | { kind: 'token'; token: string };

/** The credential of an Authorization header value, or null when it has neither form. */
export function parseAuthorization(header: string): Credential | null {
  const match = BEARER.exec(header);
  if (!match) return null;
  const value = match[1];
  if (API_KEY.test(value)) return { kind: 'key', key: value };
  if (looksLikeToken(value)) return { kind: 'token', token: value };
  return null;
}

/** The API key a Cashu token names once redeemed. */
export function apiKeyForToken(token: string): string {
  return `sk-${sha256Hex(token)}`;
}

export function keyHash(apiKey: string): string {
  return sha256Hex(apiKey);
}

export function keyPrefix(apiKey: string): string {
  return apiKey.slice(0, 12);
}

/** FastAPI's 422 for a missing header (docs/proxy-wallet.md#authorization). */
export function missingAuthorization(): HttpError {
  return new HttpError(422, 'Field required', {
    fields: [{ loc: ['header', 'authorization'], msg: 'Field required', type: 'missing' }],
  });
}

/** The account's key from the header (the key itself, or the one a token names). */
export function apiKeyOf(credential: Credential): string {
  return credential.kind === 'key' ? credential.key : apiKeyForToken(credential.token);
}

export async function findAccountByKey(db: Executor, apiKey: string): Promise<Account | null> {
  // Looked up by the key's hash: the database index compares digests, never the key itself.
  return accountByKeyHash(db, keyHash(apiKey));
}

/** Most account ids the authenticator remembers by key hash. */
const KNOWN_ACCOUNTS_MAX = 10_000;

/** What a key hash names: an account, or a child key spending from it (and when either expires). */
interface KnownKey {
  accountId: number;
  childKeyId: number | null;
  expiresAt: number | null;
}

/** The payer of a request as accountId() names it. */
export interface KeyOwner {
  accountId: number;
  keyHash: string;
  /** A child key of the account (its limit applies), or null for the account's own key. */
  childKeyId: number | null;
}

/** 401 for a key that may no longer spend (Routstr's code, on which its clients drop the key). */
export function keyRefused(refusal: 'expired' | 'revoked'): HttpError {
  return new HttpError(
    401,
    refusal === 'expired' ? 'API key has expired (its expiry time has passed)' : 'API key has been revoked',
    { code: 'invalid_api_key' },
  );
}

/**
 * 401 for a spent token used as a credential (bearer or X-Cashu), in Routstr's words: its SDK drops a
 * key only on `invalid_api_key` with "proofs already spent" (`BalanceManager.getTokenBalance`). A
 * spent token sent to be topped up stays the 400 `cashu_token_already_spent`.
 */
export function spentCredential(): HttpError {
  return new HttpError(
    401,
    'Invalid or expired Cashu key: proofs already spent (this token was redeemed before and opened no account ' +
      'here; send the API key it opened, or a new token)',
    { code: 'invalid_api_key' },
  );
}

/**
 * Finds the account an Authorization header names, opening it when a Cashu token is new. It
 * remembers account ids by key hash: a key names its account for good (no route changes a key or
 * deletes an account), so a request whose key was seen before needs no lookup (the billing
 * transaction reads the balance anyway, and refuses expired and revoked keys under its lock, also
 * those another process revoked). Whatever revokes keys forgets them here.
 */
export class Authenticator {
  private readonly knownAccounts = new Map<string, KnownKey>();

  constructor(
    private readonly db: Database,
    private readonly wallet: NodeWallet,
    /** How long a request waits for a parallel one opening the same token's account. */
    private readonly mintTimeoutMs: number,
  ) {}

  /**
   * The account an Authorization header names. A token never seen before is redeemed and becomes
   * the account (its proceeds the balance). Throws HttpError: 422 missing, 401 malformed or
   * unknown key, and the token errors of NodeWallet.redeem (400, 409, 503).
   */
  async account(authorization: string | undefined): Promise<Account> {
    if (authorization === undefined) throw missingAuthorization();
    const credential = parseAuthorization(authorization);
    if (!credential) {
      throw new HttpError(401, `Invalid authorization header. ${AUTHORIZATION_FORMS}`, {
        code: 'invalid_api_key',
      });
    }
    try {
      return await this.accountOf(credential);
    } catch (error) {
      if (error instanceof HttpError && error.options.code === 'invalid_cashu_token') {
        throw new HttpError(
          401,
          `Invalid authorization header: the Cashu token cannot be read. ${AUTHORIZATION_FORMS}`,
          { code: 'invalid_api_key' },
        );
      }
      throw error;
    }
  }

  /**
   * The account a credential names, opened when it is a new token (an unreadable token: its 400,
   * as for X-Cashu; account() turns it into the 401 of a bad header).
   */
  async accountOf(credential: Credential): Promise<Account> {
    const apiKey = apiKeyOf(credential);
    const known = await this.findByKey(apiKey);
    if (known) return known;
    if (credential.kind === 'key' && (await childKeyByHash(this.db.kysely, keyHash(apiKey)))) {
      throw new HttpError(
        400,
        'This is a child key: it pays for requests from its parent balance, and only the parent key can ' +
          'see, top up or refund that balance. Please use the parent key instead.',
        { code: 'child_key_not_allowed' },
      );
    }
    if (credential.kind === 'key') {
      // "Key not found": the words on which Routstr's clients drop a key for good.
      throw new HttpError(401, 'Key not found: this node has no account for this API key', {
        code: 'invalid_api_key',
      });
    }
    try {
      await this.wallet.redeem(credential.token, {
        credit: { newAccount: { keyHash: keyHash(apiKey), keyPrefix: keyPrefix(apiKey) } },
        purpose: 'bearer',
      });
    } catch (error) {
      if (error instanceof HttpError && error.options.code === 'redemption_in_progress') {
        // A parallel request is opening this very account: wait for it rather than fail.
        const opened = await this.waitForAccount(apiKey, 2 * this.mintTimeoutMs);
        if (opened) return opened;
      }
      if (error instanceof HttpError && error.options.code === 'cashu_token_already_spent') {
        // A parallel request may have opened it between our lookup and our redemption.
        const opened = await this.findByKey(apiKey);
        if (opened) return opened;
        throw spentCredential();
      }
      throw error;
    }
    const created = await this.findByKey(apiKey);
    if (!created) throw spentCredential();
    return created;
  }

  /**
   * The account an Authorization header (or, for X-Cashu, a credential) names, as account() and
   * accountOf() find or open it: its id and key hash.
   */
  async accountId(from: string | Credential | undefined): Promise<KeyOwner> {
    const credential = typeof from === 'string' ? parseAuthorization(from) : (from ?? null);
    const hash = credential ? keyHash(apiKeyOf(credential)) : null;
    let known = hash === null ? undefined : this.knownAccounts.get(hash);
    if (known === undefined && credential?.kind === 'key') {
      const child = await childKeyByHash(this.db.kysely, hash!);
      if (child) known = this.remember(hash!, usableChild(child));
    }
    if (known === undefined) {
      const account = typeof from === 'object' ? await this.accountOf(from) : await this.account(from);
      known = this.remember(account.keyHash, { accountId: account.id, childKeyId: null, expiresAt: account.expiresAt });
    }
    if (known.expiresAt !== null && known.expiresAt <= Date.now()) {
      this.forget(hash!);
      throw keyRefused('expired');
    }
    return { accountId: known.accountId, keyHash: hash!, childKeyId: known.childKeyId };
  }

  /**
   * The account a header names and, for a child key, that key (the history's reader): unlike
   * account(), a child key is accepted here, unless revoked or expired.
   */
  async owner(authorization: string | undefined): Promise<{ account: Account; child: ChildKeyRow | null }> {
    const credential = authorization === undefined ? null : parseAuthorization(authorization);
    if (credential?.kind === 'key') {
      const child = await childKeyByHash(this.db.kysely, keyHash(credential.key));
      if (child) {
        usableChild(child);
        const parent = await accountById(this.db.kysely, child.parent_account_id);
        if (parent) return { account: parent, child };
      }
    }
    return { account: await this.account(authorization), child: null };
  }

  private remember(hash: string, known: KnownKey): KnownKey {
    if (this.knownAccounts.size >= KNOWN_ACCOUNTS_MAX) {
      this.knownAccounts.delete(this.knownAccounts.keys().next().value!);
    }
    this.knownAccounts.set(hash, known);
    return known;
  }

  /** Drops a key from the known accounts (its account was not found, its key revoked or given an expiry). */
  forget(hash: string): void {
    this.knownAccounts.delete(hash);
  }

  private findByKey(apiKey: string): Promise<Account | null> {
    return findAccountByKey(this.db.kysely, apiKey);
  }

  private async waitForAccount(apiKey: string, withinMs: number): Promise<Account | null> {
    const until = Date.now() + withinMs;
    while (Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const account = await this.findByKey(apiKey);
      if (account) return account;
    }
    return null;
  }
}

/** A child key's cache entry; throws the 401 when it is revoked or expired. */
function usableChild(child: ChildKeyRow): KnownKey {
  if (child.revoked_at !== null) throw keyRefused('revoked');
  if (child.expires_at !== null && child.expires_at <= Date.now()) throw keyRefused('expired');
  return { accountId: child.parent_account_id, childKeyId: child.id, expiresAt: child.expires_at };
}
