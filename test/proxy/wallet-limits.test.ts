// Per-address limits on token redemptions (PROXY_REDEEM_LIMIT_PER_MINUTE): every well-formed
// token, forged or not, costs a swap at the mint, so top-ups and first uses of a token as the
// bearer count against one database-backed limit per client address. Over HTTP, on SQLite and
// PostgreSQL (where a second process on the same database sees the same counter).
import { randomBytes } from 'node:crypto';
import { getDecodedToken, getEncodedToken } from '@cashu/cashu-ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { databaseKinds } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { bearer, call, info, openAccount, receiveAtMint, refund, type Answer } from './wallet-helpers.js';

const LIMIT = 3;

describe.each(databaseKinds)('redemption rate limit on %s', (kind) => {
  let mint: DevMint;
  let server: TestServer;
  let second: TestServer | undefined;
  const env = () => ({
    SERVICES: 'proxy',
    PROXY_MINTS: mint.url,
    PROXY_MINT_TIMEOUT_MS: '2000',
    PROXY_REDEEM_LIMIT_PER_MINUTE: String(LIMIT),
    TRUST_PROXY: 'true',
  });

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    server = await startTestServer(kind, { env: env() });
  });
  afterAll(async () => {
    await second?.close();
    await server?.close();
    await mint?.close();
  });

  /** A well-formed token of the trusted mint whose proofs the mint never signed. */
  async function forged(amount: number): Promise<string> {
    const decoded = getDecodedToken(await mint.mintToken(amount), [mint.keysetId()]);
    return getEncodedToken({
      ...decoded,
      proofs: decoded.proofs.map((p) => ({ ...p, secret: randomBytes(32).toString('hex') })),
    });
  }

  const topupFrom = (base: string, address: string, key: string, token: string) =>
    call(base, 'POST', `/v1/wallet/topup?ecash_token=${encodeURIComponent(token)}`, {
      ...bearer(key),
      'x-forwarded-for': address,
    });

  function expectLimited(answer: Answer) {
    expect(answer.status).toBe(429);
    expect(answer.body.error).toEqual({
      message: expect.stringContaining('Too many Cashu tokens'),
      type: 'requests',
      code: 'rate_limit_exceeded',
    });
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
    const seconds = Number(answer.headers.get('retry-after'));
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThanOrEqual(60);
  }

  it('top-ups and bearer tokens: forged tokens count, the next redemption is 429, nothing is swapped', async () => {
    const base = server.url;
    const address = '198.51.100.7';
    // 1: a token as the bearer opens the account (a swap).
    const opened = await call(base, 'GET', '/v1/wallet/', {
      ...bearer(await mint.mintToken(5)),
      'x-forwarded-for': address,
    });
    expect(opened.status).toBe(200);
    const key: string = opened.body.api_key;
    // 2, 3: forged but well-formed tokens: the mint refuses each swap.
    for (let i = 0; i < 2; i++) {
      const refused = await topupFrom(base, address, key, await forged(8));
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe('mint_refused');
    }
    // 4: over the limit. A real token is refused before it reaches the mint, and stays good.
    const good = await mint.mintToken(13);
    expectLimited(await topupFrom(base, address, key, good));
    expectLimited(await topupFrom(base, address, key, await forged(8)));
    // Tokens that would be refused without a swap are not what the limit is about.
    const malformed = await topupFrom(base, address, key, 'cashuBnot-a-token');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_cashu_token');
    // A fresh token as the bearer, on the wallet routes and on the forwarded ones alike.
    const fresh = await mint.mintToken(7);
    expectLimited(await call(base, 'GET', '/v1/wallet/', { ...bearer(fresh), 'x-forwarded-for': address }));
    expectLimited(
      await call(
        base,
        'POST',
        '/v1/chat/completions',
        { ...bearer(fresh), 'x-forwarded-for': address, 'content-type': 'application/json' },
        '{"model":"m","messages":[]}',
      ),
    );
    // The account itself is not limited: its key works, and it can be refunded.
    const account = await call(base, 'GET', '/v1/wallet/', { ...bearer(key), 'x-forwarded-for': address });
    expect(account.status).toBe(200);
    expect(account.body.balance).toBe(5_000);
    // Another address has its own limit.
    const elsewhere = await topupFrom(base, '198.51.100.8', key, good);
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body).toMatchObject({ msats: 13_000, balance: 18_000 });
    const paid = await refund(base, key);
    expect(paid.status).toBe(200);
    expect(await receiveAtMint(mint.url, paid.body.token)).toBe(18);
    // The bearer token refused with 429 was never swapped: it is still good at the mint.
    expect(await receiveAtMint(mint.url, fresh)).toBe(7);
    expect((await info(base, key)).body.balance).toBe(0);
  });

  if (kind === 'postgres') {
    it('a second process on the same database enforces the same counter', async () => {
      second = await startTestServer('postgres', { env: env(), database: server.database });
      const address = '198.51.100.20';
      const key = await openAccount(server.url, await mint.mintToken(4));
      for (let i = 0; i < LIMIT; i++) {
        const answer = await topupFrom(i % 2 ? second.url : server.url, address, key, await mint.mintToken(1));
        expect(answer.status).toBe(200);
      }
      expectLimited(await topupFrom(second.url, address, key, await mint.mintToken(1)));
      expectLimited(await topupFrom(server.url, address, key, await mint.mintToken(1)));
      expect((await info(second.url, key)).body.balance).toBe(4_000 + LIMIT * 1_000);
    });
  }
});
