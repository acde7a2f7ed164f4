// The node announces itself on Nostr (RIP-02, NIP-01; docs/proxy-nostr.md): a signed kind 38421
// event naming its URLs, trusted mints and version, kept on every relay of NOSTR_RELAYS. Each relay
// is asked first for the node's current listing and only given a new event when that one is
// missing or differs (a restart with other mints, URLs, name or version); a relay that fails is
// retried with a growing delay. All of it runs in the background: start-up and requests never
// wait for a relay. With WORKERS > 1 only the primary process announces (src/workers.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import { finalizeEvent, verifyEvent, type Event } from 'nostr-tools/pure';
import WebSocket from 'ws';
import type { ProxyConfig } from '../common/config.js';
import { normalizeMintUrl } from '../wallet/mint-client.js';
import { NODE_VERSION } from './node-info.js';
import type { NostrConfig, NostrKey } from '../common/nostr-config.js';

/** Routstr's provider listing (routstr/nostr/listing.py); an addressable kind: relays keep the newest per `d`. */
export const LISTING_KIND = 38421;
/** Bounds on what a relay may send back: one message, and listings read per query. */
const MAX_RELAY_MESSAGE_BYTES = 256 * 1024;
const MAX_LISTINGS_READ = 20;
const MAX_LOGGED_RELAY_TEXT = 200;

/** What the node says about itself; everything that makes the announcement "change". */
export interface Listing {
  providerId: string;
  urls: string[];
  mints: string[];
  version: string;
  name: string;
  about: string;
}

interface Log {
  info(detail: object, message: string): void;
  warn(detail: object, message: string): void;
}

export function listingOf(config: ProxyConfig): Listing | null {
  const { providerId } = config.nostr;
  const urls = [config.httpUrl, config.onionUrl].filter((url): url is string => url !== null);
  if (providerId === null || urls.length === 0) return null;
  return {
    providerId,
    urls,
    mints: config.mints.map(normalizeMintUrl),
    version: NODE_VERSION,
    name: config.name,
    about: config.description,
  };
}

/** Tags and content as Routstr's listing.py makes them: `d`, a `u` per URL, a `mint` per mint, `version`. */
function template(listing: Listing) {
  return {
    kind: LISTING_KIND,
    tags: [
      ['d', listing.providerId],
      ...listing.urls.map((url) => ['u', url]),
      ...listing.mints.map((mint) => ['mint', mint]),
      ['version', listing.version],
    ],
    content: JSON.stringify({ name: listing.name, about: listing.about }),
  };
}

export function signListing(key: NostrKey, listing: Listing, createdAt: number): Event {
  return key.withSecret((secret) => finalizeEvent({ ...template(listing), created_at: createdAt }, secret));
}

/** What two listings are compared by: the tags' values (order of `u` and `mint` aside) and the content. */
function fingerprint(tags: string[][], content: string): string {
  const values = (name: string) =>
    tags
      .filter((tag) => tag[0] === name)
      .map((tag) => String(tag[1]))
      .sort();
  return JSON.stringify([values('d'), values('u'), values('mint'), values('version'), content]);
}

class RelayError extends Error {}

/** A relay's text, shortened for a log line. */
const excerpt = (text: unknown) => String(text).slice(0, MAX_LOGGED_RELAY_TEXT);

/**
 * One exchange with a relay: read the node's newest listing (REQ … EOSE); if it is not the one
 * wanted, publish a new one (EVENT → OK). Resolves with what was done; rejects on any failure.
 */
function exchange(
  url: string,
  key: NostrKey,
  listing: Listing,
  timeoutMs: number,
  sockets: Set<WebSocket>,
): Promise<{ outcome: 'present' | 'published'; id: string }> {
  const wanted = template(listing);
  const wantedPrint = fingerprint(wanted.tags, wanted.content);
  const subscription = `listing-${key.pubkey.slice(0, 8)}`;
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { maxPayload: MAX_RELAY_MESSAGE_BYTES, handshakeTimeout: timeoutMs });
    sockets.add(socket);
    let newest: Event | null = null;
    let read = 0;
    let sent: Event | null = null;
    let settled = false;
    const finish = (error: Error | null, value?: { outcome: 'present' | 'published'; id: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // A closing handshake when all went well; a failed or stuck relay is cut off.
      if (error) socket.terminate();
      else socket.close(1000);
      if (error) reject(error);
      else resolve(value!);
    };
    const timer = setTimeout(() => finish(new RelayError(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const send = (message: unknown[]) => socket.send(JSON.stringify(message));

    const publish = () => {
      // Relays keep the newest event of an address: never older than the one they hold.
      const now = Math.floor(Date.now() / 1000);
      sent = signListing(key, listing, Math.max(now, (newest?.created_at ?? 0) + 1));
      send(['EVENT', sent]);
    };

    socket.on('open', () => {
      send(['REQ', subscription, { kinds: [LISTING_KIND], authors: [key.pubkey], '#d': [listing.providerId] }]);
    });
    const onMessage = (data: WebSocket.RawData) => {
      let message: unknown;
      try {
        message = JSON.parse(data.toString());
      } catch {
        return finish(new RelayError('sent a message that is not JSON'));
      }
      if (!Array.isArray(message)) return;
      const [type, first, second, third] = message as unknown[];
      if (type === 'EVENT' && first === subscription && sent === null) {
        // Only the node's own signed listing counts: a relay cannot talk it out of publishing.
        if (++read > MAX_LISTINGS_READ) return;
        const event = second as Event;
        if (!isOwnListing(event, key.pubkey, listing.providerId)) return;
        if (!newest || event.created_at > newest.created_at) newest = event;
      } else if ((type === 'EOSE' || type === 'CLOSED') && first === subscription && sent === null) {
        send(['CLOSE', subscription]);
        if (newest && fingerprint(newest.tags, newest.content) === wantedPrint) {
          return finish(null, { outcome: 'present', id: newest.id });
        }
        publish();
      } else if (type === 'OK' && sent !== null && first === sent.id) {
        if (second === true) return finish(null, { outcome: 'published', id: sent.id });
        finish(new RelayError(`refused the event: ${excerpt(third)}`));
      }
    };
    // Whatever a relay sends, it must not throw out of an event listener (that would end the process).
    socket.on('message', (data) => {
      try {
        onMessage(data);
      } catch (error) {
        finish(new RelayError(`unexpected message: ${excerpt((error as Error).message)}`));
      }
    });
    socket.on('error', (error) => finish(new RelayError(error.message)));
    socket.on('close', () => {
      sockets.delete(socket);
      finish(new RelayError('closed the connection'));
    });
  });
}

function isOwnListing(event: Event, pubkey: string, providerId: string): boolean {
  if (!event || typeof event !== 'object' || event.pubkey !== pubkey || event.kind !== LISTING_KIND) return false;
  const d = Array.isArray(event.tags) ? event.tags.find((tag) => Array.isArray(tag) && tag[0] === 'd') : undefined;
  if (d?.[1] !== providerId) return false;
  try {
    return verifyEvent(event);
  } catch {
    return false;
  }
}

export interface Announcement {
  stop(): Promise<void>;
}

/**
 * Starts keeping the listing on every relay; returns at once. Nothing happens (and the reason is
 * logged) without a key, relays, or a URL to announce.
 */
export function startAnnouncement(config: ProxyConfig, log: Log): Announcement {
  const nostr: NostrConfig = config.nostr;
  const { key } = nostr;
  const listing = listingOf(config);
  const idle = { stop: async () => {} };
  if (key === null) return idle;
  if (nostr.relays.length === 0) {
    log.info({ npub: key.npub }, 'Nostr: no NOSTR_RELAYS, the node is not announced');
    return idle;
  }
  if (listing === null) {
    log.warn({ npub: key.npub }, 'Nostr: no PROXY_HTTP_URL or PROXY_ONION_URL to announce; not announced');
    return idle;
  }

  const stopping = new AbortController();
  const sockets = new Set<WebSocket>();
  // Waits between exchanges; `stop()` ends the wait at once. Never keeps the process alive.
  const pause = (ms: number) => sleep(ms, undefined, { signal: stopping.signal, ref: false }).catch(() => {});

  const keepOn = async (relay: string) => {
    let failures = 0;
    while (!stopping.signal.aborted) {
      try {
        const { outcome, id } = await exchange(relay, key, listing, nostr.timeoutMs, sockets);
        failures = 0;
        log.info({ relay, outcome, id, npub: key.npub }, `Nostr: listing ${outcome} on the relay`);
        await pause(nostr.reannounceMs);
      } catch (error) {
        if (stopping.signal.aborted) return;
        failures++;
        // Doubling from NOSTR_RETRY_MIN_MS to NOSTR_RETRY_MAX_MS, ±20% so relays are not hit in step.
        const base = Math.min(nostr.retryMaxMs, nostr.retryMinMs * 2 ** Math.min(failures - 1, 30));
        const delay = Math.round(base * (0.8 + 0.4 * Math.random()));
        log.warn(
          { relay, failures, retryInMs: delay, reason: excerpt((error as Error).message) },
          'Nostr: announcing on the relay failed; retrying later',
        );
        await pause(delay);
      }
    }
  };

  log.info({ npub: key.npub, relays: nostr.relays, d: listing.providerId }, 'Nostr: announcing the node');
  const loops = nostr.relays.map((relay) => keepOn(relay));
  return {
    async stop() {
      stopping.abort();
      for (const socket of sockets) socket.terminate();
      await Promise.all(loops);
    },
  };
}
