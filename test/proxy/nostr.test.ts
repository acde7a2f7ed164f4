// The node announces itself on Nostr (docs/proxy-nostr.md): a signed kind 38421 listing received
// by relay doubles on loopback, published again only when what it says changes, retried on relays
// that refuse or drop it, and its secret key in no log line and no response.
import { Writable } from 'node:stream';
import { npubEncode, nsecEncode } from 'nostr-tools/nip19';
import { finalizeEvent, generateSecretKey, getPublicKey, verifyEvent, type Event } from 'nostr-tools/pure';
import { afterEach, describe, expect, it } from 'vitest';
import { loadFullConfig } from '../../src/services.js';
import { loggerOptions } from '../../src/http/logging.js';
import { request } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { startRelayDouble, type RelayDouble } from './nostr-relay.js';

const PUBLIC_URL = 'https://node.example.com';
const ONION_URL = 'http://abcdefghijklmnop.onion';
const MINTS = ['https://mint.example.com', 'https://other-mint.example.org/Bitcoin'];

async function until<T>(probe: () => T | undefined | false, what: string, timeoutMs = 45_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const tagValues = (event: Event, name: string) => event.tags.filter((tag) => tag[0] === name).map((tag) => tag[1]);

describe('the announcement on Nostr', () => {
  const secret = generateSecretKey();
  const nsec = nsecEncode(secret);
  const hexSecret = Buffer.from(secret).toString('hex');
  const pubkey = getPublicKey(secret);
  const open: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const item of open.splice(0).reverse()) await item.close();
  });

  async function relay(): Promise<RelayDouble> {
    const started = await startRelayDouble();
    open.push(started);
    return started;
  }

  async function node(env: Record<string, string>, logLines?: string[]): Promise<TestServer> {
    const stream = new Writable({
      write(chunk, _encoding, done) {
        logLines?.push(String(chunk));
        done();
      },
    });
    const server = await startTestServer('sqlite', {
      env: {
        SERVICES: 'proxy',
        PROXY_MINTS: MINTS.join(','),
        PROXY_HTTP_URL: PUBLIC_URL,
        PROXY_NAME: 'Test node',
        PROXY_DESCRIPTION: 'A node of the tests',
        NOSTR_NSEC: nsec,
        NOSTR_RETRY_MIN_MS: '20',
        NOSTR_RETRY_MAX_MS: '100',
        NOSTR_TIMEOUT_MS: '2000',
        ...env,
      },
      logger: logLines ? { ...(loggerOptions('trace') as object), stream } : undefined,
    });
    open.push(server);
    return server;
  }

  it('publishes a signed kind 38421 listing with d, u, mint and version tags, and shows the npub', async () => {
    const first = await relay();
    const second = await relay();
    const server = await node({ NOSTR_RELAYS: `${first.url},${second.url}`, PROXY_ONION_URL: ONION_URL });

    for (const target of [first, second]) {
      const [event] = await until(() => target.received.length > 0 && target.received, 'the listing');
      expect(verifyEvent(event)).toBe(true);
      expect(event.kind).toBe(38421);
      expect(event.pubkey).toBe(pubkey);
      expect(tagValues(event, 'd')).toEqual([pubkey.slice(0, 12)]);
      expect(tagValues(event, 'u')).toEqual([PUBLIC_URL, ONION_URL]);
      expect(tagValues(event, 'mint')).toEqual(MINTS);
      expect(tagValues(event, 'version')).toEqual(['0.0.1']);
      expect(JSON.parse(event.content)).toEqual({ name: 'Test node', about: 'A node of the tests' });
      // The node asked for its own listing first.
      expect(target.queries[0]).toMatchObject({ kinds: [38421], authors: [pubkey], '#d': [pubkey.slice(0, 12)] });
    }

    const info = await request(`${server.url}/v1/info`);
    expect(info.status).toBe(200);
    expect(info.body.npub).toBe(npubEncode(pubkey));
  });

  it('publishes again only when what it announces changes', async () => {
    const target = await relay();
    const env = { NOSTR_RELAYS: target.url, NOSTR_PROVIDER_ID: 'my-node' };
    const first = await node(env);
    const [original] = await until(() => target.received.length === 1 && target.received, 'the first listing');
    expect(tagValues(original, 'd')).toEqual(['my-node']);
    await first.close();

    // A restart with the same configuration finds its listing on the relay and sends nothing.
    const logLines: string[] = [];
    const same = await node(env, logLines);
    await until(() => logLines.some((line) => line.includes('"outcome":"present"')), 'the relay to be checked');
    await same.close();
    expect(target.queries).toHaveLength(2);
    expect(target.received).toHaveLength(1);

    // A restart with another mint replaces the listing.
    const changed = await node({ ...env, PROXY_MINTS: MINTS[1] });
    const [, replacement] = await until(() => target.received.length === 2 && target.received, 'a new listing');
    expect(verifyEvent(replacement)).toBe(true);
    expect(tagValues(replacement, 'mint')).toEqual([MINTS[1]]);
    expect(tagValues(replacement, 'd')).toEqual(['my-node']);
    // Newer than the listing it replaces, even within the same second.
    expect(replacement.created_at).toBeGreaterThan(original.created_at);
    await changed.close();
  });

  it('is not talked out of publishing by a listing with a forged signature', async () => {
    const target = await relay();
    // What the node would publish, but signed by another key and given the node's pubkey.
    const forged = finalizeEvent(
      {
        kind: 38421,
        created_at: Math.floor(Date.now() / 1000) - 60,
        tags: [
          ['d', pubkey.slice(0, 12)],
          ['u', PUBLIC_URL],
          ...MINTS.map((mint) => ['mint', mint]),
          ['version', '0.0.1'],
        ],
        content: JSON.stringify({ name: 'Test node', about: 'A node of the tests' }),
      },
      generateSecretKey(),
    );
    target.hold({ ...forged, pubkey });
    await node({ NOSTR_RELAYS: target.url });
    const [event] = await until(() => target.accepted.length === 1 && target.accepted, 'the listing');
    expect(verifyEvent(event)).toBe(true);
    expect(event.created_at).toBeGreaterThan(forged.created_at);
  });

  it('retries relays that refuse, drop the connection or never answer, without holding up the node', async () => {
    const refusing = await relay();
    refusing.misbehave('refuse', 2);
    const dropping = await relay();
    dropping.misbehave('disconnect', 2);
    const silent = await relay();
    silent.misbehave('silent', 1);
    const logLines: string[] = [];
    const server = await node(
      { NOSTR_RELAYS: [refusing.url, dropping.url, silent.url].join(','), NOSTR_TIMEOUT_MS: '1000' },
      logLines,
    );
    // The node serves while the relays are still failing.
    expect((await request(`${server.url}/v1/info`)).status).toBe(200);

    for (const target of [refusing, dropping, silent]) {
      await until(() => target.accepted.length === 1, 'the listing to be accepted');
      expect(verifyEvent(target.accepted[0])).toBe(true);
    }
    // Each attempt connects and signs afresh: two refused or dropped, then one accepted (a busy
    // machine may add attempts that timed out).
    for (const target of [refusing, dropping]) {
      expect(target.received.length).toBeGreaterThanOrEqual(3);
      expect(target.connections).toBeGreaterThanOrEqual(3);
      expect(target.received.every((event) => verifyEvent(event))).toBe(true);
    }
    await until(() => logLines.filter((line) => line.includes('"outcome":"published"')).length === 3, 'the log');
    const failures = logLines.filter((line) => line.includes('announcing on the relay failed'));
    expect(failures.length).toBeGreaterThanOrEqual(5);
    expect(failures.some((line) => line.includes('refused the event: blocked'))).toBe(true);
    expect(failures.some((line) => line.includes('closed the connection'))).toBe(true);
    expect(failures.some((line) => line.includes('no answer within 1000 ms'))).toBe(true);
  });

  it('keeps the secret key out of every log line and response', async () => {
    for (const [form, value] of [
      ['nsec', nsec],
      ['hex', hexSecret],
    ]) {
      const target = await relay();
      target.misbehave('refuse', 1);
      const logLines: string[] = [];
      const server = await node({ NOSTR_NSEC: value, NOSTR_RELAYS: target.url }, logLines);
      await until(() => target.received.length === 2, `the listing (${form})`);
      const bodies = await Promise.all(
        ['/v1/info', '/', '/v1/models', '/openapi/proxy.json'].map(async (path) => {
          const answer = await fetch(`${server.url}${path}`);
          return `${JSON.stringify([...answer.headers])}${await answer.text()}`;
        }),
      );
      expect(bodies[0]).toContain(npubEncode(pubkey));
      const everything = [...logLines, ...bodies, JSON.stringify(server.config)].join('\n').toLowerCase();
      expect(logLines.length).toBeGreaterThan(0);
      expect(everything).toContain(npubEncode(pubkey));
      expect(everything).not.toContain(nsec);
      expect(everything).not.toContain(hexSecret);
    }
  });

  it('refuses a malformed key or relay at start, without repeating the key', () => {
    const broken = `${nsec.slice(0, -1)}${nsec.endsWith('q') ? 'p' : 'q'}`;
    for (const value of [broken, hexSecret.slice(2), `nsec1${hexSecret}`]) {
      expect(() => loadFullConfig({ NOSTR_NSEC: value })).toThrowError(/^NOSTR_NSEC: /);
      try {
        loadFullConfig({ NOSTR_NSEC: value });
      } catch (error) {
        expect((error as Error).message).not.toContain(value.slice(5, 30));
      }
    }
    expect(() => loadFullConfig({ NOSTR_RELAYS: 'https://relay.example.com' })).toThrowError(/NOSTR_RELAYS: not a ws/);
  });

  it('shows no npub and announces nothing without a key', async () => {
    const target = await relay();
    const server = await node({ NOSTR_NSEC: '', NOSTR_RELAYS: target.url });
    expect((await request(`${server.url}/v1/info`)).body.npub).toBeNull();
    expect(target.connections).toBe(0);
  });
});
