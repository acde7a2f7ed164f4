// Bad input: a table of broken tokens with the precise answer each gets, fees, mixed mints, and
// a fuzz of the Authorization header and of ecash_token (1 200 generated cases): never a 5xx,
// never a wrong credit. Both go through app.inject: no socket per request.
import { getDecodedToken, getEncodedToken } from '@cashu/cashu-ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { databaseKinds } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { bearer, call, info, openAccount, receiveAtMint, refund, topup } from './wallet-helpers.js';

/** A v3 token (cashuA…) from raw JSON: the way to send anything at all. */
function v3(body: unknown): string {
  return `cashuA${Buffer.from(JSON.stringify(body)).toString('base64url')}`;
}

/** A small deterministic PRNG (mulberry32), so a failing fuzz case can be replayed. */
function prng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe.each(databaseKinds)('bad input on %s', (kind) => {
  let mint: DevMint;
  let feeMint: DevMint;
  let server: TestServer;
  let base: string;
  let key: string;

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    feeMint = await startDevMint({ unit: 'sat', inputFeePpk: 1000, port: 0 });
    server = await startTestServer(kind, {
      env: { SERVICES: 'proxy', PROXY_MINTS: `${mint.url},${feeMint.url}`, PROXY_MINT_TIMEOUT_MS: '3000' },
    });
    base = server.url;
    key = await openAccount(base, await mint.mintToken(10));
  });
  afterAll(async () => {
    await server?.close();
    await feeMint?.close();
    await mint?.close();
  });

  const balance = async () => (await info(base, key)).body.balance;

  it('answers each broken token with its precise 4xx and credits nothing', async () => {
    const good = getDecodedToken(await mint.mintToken(8), [mint.keysetId()]);
    const proof = { id: good.proofs[0].id, amount: 8, secret: good.proofs[0].secret, C: good.proofs[0].C };
    const keyset = mint.keysetId();
    const fakeC = `02${'11'.repeat(32)}`;
    const valid = await mint.mintToken(4);
    const cases: [string, string, number, string][] = [
      ['truncated', valid.slice(0, valid.length - 12), 400, 'invalid_cashu_token'],
      ['garbage after the prefix', 'cashuBthisisnotcbor', 400, 'invalid_cashu_token'],
      ['not a token', 'hello', 400, 'invalid_cashu_token'],
      ['unknown version', `cashuC${valid.slice(6)}`, 400, 'invalid_cashu_token'],
      ['JSON that is no token', v3({ hello: 'world' }), 400, 'invalid_cashu_token'],
      ['no proofs', v3({ token: [{ mint: mint.url, proofs: [] }], unit: 'sat' }), 400, 'invalid_cashu_token'],
      [
        'duplicate proofs',
        v3({ token: [{ mint: mint.url, proofs: [proof, proof] }], unit: 'sat' }),
        400,
        'duplicate_proofs',
      ],
      [
        'unknown keyset',
        v3({ token: [{ mint: mint.url, proofs: [{ ...proof, id: '00ffffffffffffff' }] }], unit: 'sat' }),
        400,
        'unknown_keyset',
      ],
      [
        'negative amount (cashu-ts refuses to decode it)',
        v3({ token: [{ mint: mint.url, proofs: [{ ...proof, amount: -8 }] }], unit: 'sat' }),
        400,
        'invalid_cashu_token',
      ],
      [
        'zero amount',
        v3({ token: [{ mint: mint.url, proofs: [{ ...proof, amount: 0 }] }], unit: 'sat' }),
        400,
        'invalid_amount',
      ],
      [
        'amount not a power of two',
        v3({ token: [{ mint: mint.url, proofs: [{ ...proof, amount: 3 }] }], unit: 'sat' }),
        400,
        'invalid_amount',
      ],
      [
        'amount beyond safe integers',
        v3({ token: [{ mint: mint.url, proofs: [{ ...proof, amount: 2 ** 60 }] }], unit: 'sat' }),
        400,
        'invalid_amount',
      ],
      [
        'huge amount',
        v3({ token: [{ mint: mint.url, proofs: [{ ...proof, amount: 2 ** 42 }] }], unit: 'sat' }),
        400,
        'amount_too_large',
      ],
      [
        'string secret missing',
        v3({ token: [{ mint: mint.url, proofs: [{ ...proof, secret: 42 }] }], unit: 'sat' }),
        400,
        'invalid_cashu_token',
      ],
      [
        'signature not a point',
        v3({ token: [{ mint: mint.url, proofs: [{ ...proof, C: 'zz' }] }], unit: 'sat' }),
        400,
        'invalid_cashu_token',
      ],
      [
        'forged signature',
        v3({
          token: [{ mint: mint.url, proofs: [{ id: keyset, amount: 8, secret: 'a'.repeat(64), C: fakeC }] }],
          unit: 'sat',
        }),
        400,
        'mint_refused',
      ],
      [
        'untrusted mint',
        v3({ token: [{ mint: 'https://mint.example.com', proofs: [proof] }], unit: 'sat' }),
        400,
        'cashu_foreign_mint_swap_failed',
      ],
      [
        'mint URL garbage',
        v3({ token: [{ mint: 'javascript:alert(1)', proofs: [proof] }], unit: 'sat' }),
        400,
        'invalid_cashu_token',
      ],
      ['unsupported unit', v3({ token: [{ mint: mint.url, proofs: [proof] }], unit: 'usd' }), 400, 'unsupported_unit'],
      [
        'unit that contradicts the keyset',
        v3({ token: [{ mint: mint.url, proofs: [proof] }], unit: 'msat' }),
        400,
        'invalid_cashu_token',
      ],
    ];
    const got: unknown[] = [];
    for (const [name, token] of cases) {
      const answer = await topup(server.app, key, token);
      got.push([name, answer.status, answer.body?.error?.code, answer.body?.error?.type]);
    }
    // Routstr's error.type, on which its clients branch: a mint's refusal or a mint not trusted here
    // (they then try another of their mints) is a mint_error, a token worth too much a cashu_error,
    // the rest an invalid token.
    const typeOf = (code: string) =>
      code === 'mint_refused' || code === 'cashu_foreign_mint_swap_failed'
        ? 'mint_error'
        : code === 'amount_too_large'
          ? 'cashu_error'
          : 'invalid_token';
    expect(got).toEqual(cases.map(([name, , status, code]) => [name, status, code, typeOf(code)]));
    const untrusted = await topup(server.app, key, cases.find((c) => c[0] === 'untrusted mint')![1]);
    expect(untrusted.body.error.message).toContain(mint.url);
    expect(untrusted.body.error.message).toContain('PROXY_MINTS');
    expect(await balance()).toBe(10_000);
    // The real proof used in the broken tokens above was never spent: it still tops up.
    const honest = await topup(server.app, key, getEncodedToken({ mint: mint.url, unit: 'sat', proofs: good.proofs }));
    expect(honest.status).toBe(200);
    expect(await balance()).toBe(18_000);
  });

  it("credits the token minus the mint's input fee, and refuses a token the fee would eat", async () => {
    const account = await openAccount(base, await mint.mintToken(1));
    const eight = await feeMint.mintToken(8); // one proof: 1 sat fee
    const answer = await topup(base, account, eight);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ msats: 7_000, fee_msats: 1_000, balance: 8_000 });
    // A balance from two mints is refunded at the first of PROXY_MINTS.
    expect((await info(base, account)).body.mint).toBe(mint.url);
    const one = await feeMint.mintToken(1);
    const below = await topup(base, account, one);
    expect(below.status).toBe(400);
    expect(below.body.error.code).toBe('cashu_token_swap_fees_exceed_amount');
    expect((await info(base, account)).body.balance).toBe(8_000);
  });

  // The fuzz exercises parsing, not storage: once is enough.
  if (kind === 'sqlite') {
    it('fuzz: 1 200 generated authorization headers and ecash tokens, no 5xx', async () => {
      const random = prng(20261122);
      const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)];
      const valid = await mint.mintToken(2);
      const printable = (n: number) =>
        Array.from({ length: n }, () => String.fromCharCode(32 + Math.floor(random() * 95))).join('');
      // Bytes a header value may carry (HTTP field-content: visible ASCII, space, obs-text).
      const latin1 = (n: number) =>
        Array.from({ length: n }, () =>
          String.fromCharCode(pick([32 + Math.floor(random() * 95), 128 + Math.floor(random() * 128)])),
        ).join('');
      const mutate = (text: string) => {
        const chars = [...text];
        const edits = 1 + Math.floor(random() * 4);
        for (let i = 0; i < edits; i++) {
          const at = Math.floor(random() * chars.length);
          const op = random();
          if (op < 0.4) chars[at] = String.fromCharCode(33 + Math.floor(random() * 94));
          else if (op < 0.7) chars.splice(at, 1);
          else chars.splice(at, 0, String.fromCharCode(33 + Math.floor(random() * 94)));
        }
        return chars.join('');
      };
      const credential = () =>
        pick([
          () => `sk-${printable(Math.floor(random() * 80))}`,
          () => `cashuA${printable(Math.floor(random() * 200))}`,
          () => `cashuB${printable(Math.floor(random() * 200))}`,
          () => mutate(valid),
          () => valid.slice(0, Math.floor(random() * valid.length)),
          () => key.slice(0, Math.floor(random() * key.length)),
          () => mutate(key),
          () => latin1(Math.floor(random() * 60)),
          () => 'A'.repeat(Math.floor(random() * 8000)),
        ])();
      const header = () =>
        pick([
          () => `Bearer ${credential()}`,
          () => `bearer  ${credential()} `,
          () => credential(),
          () => `Basic ${credential()}`,
          () => `Bearer\t${credential()}`,
          () => latin1(Math.floor(random() * 100)),
        ])();
      const before = await balance();
      const cases = 1200;
      const statuses = new Map<number, number>();
      for (let i = 0; i < cases; i += 20) {
        const batch = Array.from({ length: 20 }, (_, j) => {
          const n = i + j;
          if (n % 2 === 0) return call(server.app, 'GET', '/v1/wallet/', { authorization: header() });
          return call(
            server.app,
            'POST',
            `/v1/wallet/topup?ecash_token=${encodeURIComponent(credential())}`,
            n % 3 === 0 ? { authorization: header() } : bearer(key),
          );
        });
        for (const answer of await Promise.all(batch)) {
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          expect(answer.status, answer.text).toBeLessThan(500);
          expect(answer.body, answer.text).toBeTypeOf('object');
        }
      }
      expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBe(cases);
      // The generator reaches both kinds of refusal: bad token (400) and bad credential (401).
      for (const status of [400, 401]) expect(statuses.get(status) ?? 0).toBeGreaterThan(10);
      // Nothing was credited by the fuzz except, possibly, the one valid token (2 sat) it mutated.
      expect([before, before + 2_000]).toContain(await balance());
    });
  }
});

describe('a mint counting in msat', () => {
  let mint: DevMint;
  let server: TestServer;

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'msat', inputFeePpk: 0, port: 0 });
    server = await startTestServer(databaseKinds[0], { env: { SERVICES: 'proxy', PROXY_MINTS: mint.url } });
  });
  afterAll(async () => {
    await server?.close();
    await mint?.close();
  });

  it('credits msat one to one and refunds to the msat', async () => {
    const key = await openAccount(server.url, await mint.mintToken(1500));
    expect((await info(server.url, key)).body).toMatchObject({ balance: 1500, unit: 'msat', mint: mint.url });
    const more = await topup(server.url, key, await mint.mintToken(777));
    expect(more.body).toEqual({ msats: 777, fee_msats: 0, balance: 2277 });
    const paid = await refund(server.url, key);
    expect(paid.body).toMatchObject({ msats: 2277, unit: 'msat', balance: 0 });
    expect(await receiveAtMint(mint.url, paid.body.token, 'msat')).toBe(2277);
  });
});
