// Configuration of the node's Nostr announcement (docs/proxy-nostr.md), read from the environment.
// The secret key never leaves this module's NostrKey: not in an error message, not in a log line,
// not in a JSON rendering of the configuration.
import { getPublicKey } from 'nostr-tools/pure';
import { decode, npubEncode } from 'nostr-tools/nip19';
import { ConfigError, type Env, int, list, optionalStr } from '../../env.js';

const HEX_KEY = /^[0-9a-fA-F]{64}$/;

/** The node's Nostr key pair. The secret stays in a private field. */
export class NostrKey {
  readonly #secret: Uint8Array;
  /** The public key, 64 lowercase hex digits. */
  readonly pubkey: string;
  readonly npub: string;

  constructor(secret: Uint8Array) {
    this.#secret = secret;
    this.pubkey = getPublicKey(secret);
    this.npub = npubEncode(this.pubkey);
  }

  /** Runs `use` with the secret (signing); the only way to reach it. */
  withSecret<T>(use: (secret: Uint8Array) => T): T {
    return use(this.#secret);
  }

  toJSON() {
    return { npub: this.npub };
  }
}

export interface NostrConfig {
  /** NOSTR_NSEC; null: the node has no Nostr identity and announces nothing. */
  key: NostrKey | null;
  /** NOSTR_RELAYS: ws:// or wss:// URLs. Empty: nothing is published (the npub is still shown). */
  relays: string[];
  /** The `d` tag: NOSTR_PROVIDER_ID, else the first 12 hex digits of the public key (as Routstr does). */
  providerId: string | null;
  /** Time limit of one exchange with a relay (connect, query, publish). */
  timeoutMs: number;
  /** Backoff of a relay that failed: first delay, doubled per failure up to the maximum. */
  retryMinMs: number;
  retryMaxMs: number;
  /** How often the announcement is checked again on every relay (republished where missing or stale). */
  reannounceMs: number;
}

function parseSecret(value: string): Uint8Array {
  // The messages name the variable and the expected form, never the value.
  if (HEX_KEY.test(value)) return Uint8Array.from(Buffer.from(value, 'hex'));
  if (value.startsWith('nsec1')) {
    let decoded: ReturnType<typeof decode>;
    try {
      decoded = decode(value);
    } catch {
      throw new ConfigError('NOSTR_NSEC', 'not a valid nsec1… key (bad checksum or length)');
    }
    if (decoded.type === 'nsec') return decoded.data;
  }
  throw new ConfigError('NOSTR_NSEC', 'expected an nsec1… key or 64 hex digits');
}

function relayUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError('NOSTR_RELAYS', `not a valid URL: "${value}"`);
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
    throw new ConfigError('NOSTR_RELAYS', `not a ws:// or wss:// URL: "${value}"`);
  }
  return url.href;
}

/** The key pair of an nsec1… key or 64 hex digits; ConfigError (naming NOSTR_NSEC, never the value) otherwise. */
export function nostrKeyOf(text: string): NostrKey {
  try {
    return new NostrKey(parseSecret(text));
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    // A 32-byte value outside the curve's order.
    throw new ConfigError('NOSTR_NSEC', 'not a valid secp256k1 secret key');
  }
}

export function loadNostrConfig(env: Env): NostrConfig {
  const nsec = optionalStr(env, 'NOSTR_NSEC');
  const key = nsec === undefined ? null : nostrKeyOf(nsec);
  const providerId = optionalStr(env, 'NOSTR_PROVIDER_ID') ?? key?.pubkey.slice(0, 12) ?? null;
  if (providerId !== null && providerId.length > 256) throw new ConfigError('NOSTR_PROVIDER_ID', 'longer than 256');
  const retryMinMs = int(env, 'NOSTR_RETRY_MIN_MS', 5000, 10, 3_600_000);
  return {
    key,
    relays: [...new Set(list(env, 'NOSTR_RELAYS', []).map(relayUrl))],
    providerId,
    timeoutMs: int(env, 'NOSTR_TIMEOUT_MS', 10_000, 100, 300_000),
    retryMinMs,
    retryMaxMs: Math.max(retryMinMs, int(env, 'NOSTR_RETRY_MAX_MS', 900_000, 10, 86_400_000)),
    reannounceMs: int(env, 'NOSTR_REANNOUNCE_HOURS', 24, 1, 8760) * 3_600_000,
  };
}
