// The wallet routes over HTTP against the dev mint, on SQLite and PostgreSQL.
import { getDecodedToken } from '@cashu/cashu-ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { databaseKinds, postgresAvailable } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { bearer, call, info, openAccount, receiveAtMint, refund, topup } from './wallet-helpers.js';
import { accountId, startWalletNode, stopWalletNode } from './wallet-node.js';

describe.each(databaseKinds)('wallet routes on %s', (kind) => {
  let mint: DevMint;
  let server: TestServer;
  let base: string;

  beforeAll(async () => {
    ({ mint, server, base } = await startWalletNode(kind, { PROXY_NAME: 'test node', PROXY_MINT_TIMEOUT_MS: '2000' }));
  });
  afterAll(() => stopWalletNode({ mint, server }));

  it('GET / describes the node', async () => {
    const answer = await call(base, 'GET', '/');
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ name: 'test node', version: '0.0.1', mints: [mint.url], http_url: null });
    expect(typeof answer.body.description).toBe('string');
  });

  it('publishes /openapi/proxy.json as OpenAPI 3.1.0, version 0.0.1, with the wallet routes', async () => {
    const answer = await call(base, 'GET', '/openapi/proxy.json');
    expect(answer.status).toBe(200);
    expect(answer.body.openapi).toBe('3.1.0');
    expect(answer.body.info.version).toBe('0.0.1');
    const wallet = answer.body.paths['/v1/wallet/'].get;
    expect(wallet.parameters).toContainEqual(
      expect.objectContaining({ name: 'authorization', in: 'header', required: true }),
    );
    expect(Object.keys(wallet.responses['200'].content['application/json'].schema.properties)).toEqual(
      expect.arrayContaining(['api_key', 'balance', 'reserved', 'total_spent', 'total_requests', 'created_at']),
    );
    const topupParams = answer.body.paths['/v1/wallet/topup'].post.parameters;
    expect(topupParams).toContainEqual(expect.objectContaining({ name: 'ecash_token', in: 'query', required: true }));
    expect(answer.body.paths['/v1/wallet/refund'].post).toBeTruthy();
  });

  it('a token as the bearer opens an account named sk-sha256(token); the same token keeps naming it', async () => {
    const token = await mint.mintToken(100);
    const first = await info(base, token);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      balance: 100_000,
      reserved: 0,
      available: 100_000,
      total_spent: 0,
      total_requests: 0,
      mint: mint.url,
      unit: 'sat',
    });
    expect(first.body.api_key).toMatch(/^sk-[0-9a-f]{64}$/);
    expect(Number.isInteger(first.body.created_at)).toBe(true);
    expect(Math.abs(first.body.created_at - Date.now() / 1000)).toBeLessThan(60);
    const again = await info(base, token);
    expect(again.body).toMatchObject({ api_key: first.body.api_key, balance: 100_000 });
    const byKey = await info(base, first.body.api_key);
    expect(byKey.body).toMatchObject({ api_key: first.body.api_key, balance: 100_000 });
    expect(await receiveAtMint(mint.url, token).catch((e) => String(e))).toMatch(/spent/i);
  });

  it('the same fresh token as the bearer of 10 parallel requests opens one account, credited once', async () => {
    const token = await mint.mintToken(12);
    const answers = await Promise.all(Array.from({ length: 10 }, () => info(base, token)));
    for (const answer of answers) expect(answer.status).toBe(200);
    expect(new Set(answers.map((a) => a.body.api_key)).size).toBe(1);
    expect((await info(base, answers[0].body.api_key)).body.balance).toBe(12_000);
  });

  it('tops up, reports the new balance, and credits a token only once', async () => {
    const key = await openAccount(base, await mint.mintToken(10));
    const token = await mint.mintToken(21);
    const first = await topup(base, key, token);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ msats: 21_000, fee_msats: 0, balance: 31_000 });
    const second = await topup(base, key, token);
    expect(second.status).toBe(400);
    expect(second.body.error).toMatchObject({ code: 'cashu_token_already_spent', type: 'token_already_spent' });
    expect((await info(base, key)).body.balance).toBe(31_000);
  });

  it('the same token in 20 parallel top-ups credits once', async () => {
    const key = await openAccount(base, await mint.mintToken(1));
    const token = await mint.mintToken(64);
    const answers = await Promise.all(Array.from({ length: 20 }, () => topup(base, key, token)));
    const ok = answers.filter((a) => a.status === 200);
    expect(ok).toHaveLength(1);
    for (const answer of answers) expect([200, 400, 409]).toContain(answer.status);
    expect((await info(base, key)).body.balance).toBe(65_000);
  });

  it('refunds the balance as a mint token redeemable with cashu-ts; a repeated call returns it again', async () => {
    const key = await openAccount(base, await mint.mintToken(50));
    expect((await topup(base, key, await mint.mintToken(7))).status).toBe(200);
    const first = await refund(base, key);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ msats: 57_000, mint: mint.url, unit: 'sat', balance: 0, repeated: false });
    const decoded = getDecodedToken(first.body.token, [mint.keysetId()]);
    expect(decoded.mint).toBe(mint.url);
    expect(decoded.unit).toBe('sat');
    const again = await refund(base, key);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ msats: 57_000, token: first.body.token, repeated: true });
    expect(await receiveAtMint(mint.url, first.body.token)).toBe(57);
    expect((await info(base, key)).body).toMatchObject({ balance: 0, available: 0 });
  });

  it('refunds whole sats only and keeps the reserved part', async () => {
    const key = await openAccount(base, await mint.mintToken(30));
    const id = await accountId(server, key);
    // A request in flight holds 10 500 msat and has spent 1 500 msat already.
    await server.db.kysely
      .updateTable('proxy_accounts')
      .set({ balance_msat: 28_500, reserved_msat: 10_500 })
      .where('id', '=', id)
      .execute();
    const answer = await refund(base, key);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ msats: 18_000, balance: 10_500 });
    expect(await receiveAtMint(mint.url, answer.body.token)).toBe(18);
  });

  it('an account with nothing ever refunded and nothing available gets 400', async () => {
    const key = await openAccount(base, await mint.mintToken(2));
    const id = await accountId(server, key);
    await server.db.kysely.updateTable('proxy_accounts').set({ reserved_msat: 2000 }).where('id', '=', id).execute();
    const answer = await refund(base, key);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('no_balance_to_refund');
  });

  it('concurrent refunds of one account pay out once', async () => {
    const key = await openAccount(base, await mint.mintToken(40));
    const answers = await Promise.all(Array.from({ length: 8 }, () => refund(base, key)));
    const fresh = answers.filter((a) => a.status === 200 && a.body.repeated === false);
    expect(fresh).toHaveLength(1);
    for (const answer of answers) {
      expect([200, 409]).toContain(answer.status);
      if (answer.status === 200) expect(answer.body.token).toBe(fresh[0].body.token);
    }
    expect(await receiveAtMint(mint.url, fresh[0].body.token)).toBe(40);
  });

  it('mint down: top-up 503 with the token untouched, redeemable once the mint is back', async () => {
    const key = await openAccount(base, await mint.mintToken(5));
    const token = await mint.mintToken(13);
    await mint.faults.set({ down: true });
    try {
      const down = await topup(base, key, token);
      expect(down.status).toBe(503);
      expect(down.body.error).toMatchObject({ code: 'cashu_mint_unreachable', type: 'mint_unreachable' });
      expect(down.body.error.message).toMatch(/unreachable/);
    } finally {
      await mint.faults.set({ down: false });
    }
    const later = await topup(base, key, token);
    expect(later.status).toBe(200);
    expect(later.body).toMatchObject({ msats: 13_000, balance: 18_000 });
  });

  it('mint down: refund 503 and the debit is given back', async () => {
    const key = await openAccount(base, await mint.mintToken(6));
    await mint.faults.set({ down: true });
    try {
      const down = await refund(base, key);
      expect(down.status).toBe(503);
      expect((await info(base, key)).body).toMatchObject({ balance: 6_000, available: 6_000 });
    } finally {
      await mint.faults.set({ down: false });
    }
    const later = await refund(base, key);
    expect(later.status).toBe(200);
    expect(await receiveAtMint(mint.url, later.body.token)).toBe(6);
  });

  describe('authorization', () => {
    it('missing header: FastAPI 422', async () => {
      for (const [method, path] of [
        ['GET', '/v1/wallet/'],
        ['POST', '/v1/wallet/refund'],
        ['POST', '/v1/wallet/topup?ecash_token=x'],
      ]) {
        const answer = await call(base, method, path);
        expect(answer.status).toBe(422);
        expect(answer.body).toEqual({
          detail: [{ loc: ['header', 'authorization'], msg: 'Field required', type: 'missing' }],
        });
      }
    });

    it('missing ecash_token: FastAPI 422', async () => {
      const answer = await call(base, 'POST', '/v1/wallet/topup', bearer('sk-abc'));
      expect(answer.status).toBe(422);
      expect(answer.body).toEqual({
        detail: [{ loc: ['query', 'ecash_token'], msg: 'Field required', type: 'missing' }],
      });
    });

    it('malformed header: 401 naming both forms', async () => {
      for (const value of ['sk-abc', 'Basic dXNlcjpwYXNz', 'Bearer', 'Bearer nonsense', 'Bearer sk-a b', '']) {
        const answer = await call(base, 'GET', '/v1/wallet/', { authorization: value });
        expect(answer.status).toBe(401);
        expect(answer.body.error.message).toMatch(/sk-/);
        expect(answer.body.error.message).toMatch(/cashuA/);
        expect(answer.body.error.message).toMatch(/cashuB/);
      }
    });

    it('unknown key: 401', async () => {
      const answer = await info(base, `sk-${'0'.repeat(64)}`);
      expect(answer.status).toBe(401);
      expect(answer.body.error).toMatchObject({
        message: expect.stringContaining('Key not found'),
        code: 'invalid_api_key',
      });
    });
  });
});

describe.runIf(postgresAvailable)('two processes on one PostgreSQL', () => {
  let mint: DevMint;
  let first: TestServer;
  let second: TestServer;

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    const env = { SERVICES: 'proxy', PROXY_MINTS: mint.url };
    first = await startTestServer('postgres', { env });
    second = await startTestServer('postgres', { env, database: first.database });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await mint?.close();
  });

  it('the same token sent 10 times to each credits once, and one refund pays out once', async () => {
    const key = await openAccount(first.url, await mint.mintToken(3));
    const token = await mint.mintToken(32);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => topup(i % 2 ? second.url : first.url, key, token)),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect((await info(second.url, key)).body.balance).toBe(35_000);
    const refunds = await Promise.all([
      refund(first.url, key),
      refund(second.url, key),
      refund(first.url, key),
      refund(second.url, key),
    ]);
    const fresh = refunds.filter((a) => a.status === 200 && !a.body.repeated);
    expect(fresh).toHaveLength(1);
    expect(await receiveAtMint(mint.url, fresh[0].body.token)).toBe(35);
    expect((await info(first.url, key)).body.balance).toBe(0);
  });
});
