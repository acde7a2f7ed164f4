// Routstr's balance routes (issue 13): /v1/balance/… beside today's /v1/wallet/….
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevMint } from '../../src/devmint/index.js';
import { databaseKinds } from '../support/databases.js';
import type { TestServer } from '../support/server.js';
import { bearer, call, openAccount } from './wallet-helpers.js';
import { startWalletNode, stopWalletNode } from './wallet-node.js';

describe.each(databaseKinds)('Routstr balance routes on %s', (kind) => {
  let mint: DevMint;
  let server: TestServer;
  let base: string;

  beforeAll(async () => {
    ({ mint, server, base } = await startWalletNode(kind, { PROXY_MINT_TIMEOUT_MS: '2000' }));
  });
  afterAll(() => stopWalletNode({ mint, server }));

  it('GET /v1/balance/, /v1/balance/info and /v1/wallet/info answer as GET /v1/wallet/', async () => {
    const key = await openAccount(base, await mint.mintToken(10));
    const wallet = await call(base, 'GET', '/v1/wallet/', bearer(key));
    expect(wallet.status).toBe(200);
    for (const path of ['/v1/balance/', '/v1/balance/info', '/v1/wallet/info']) {
      const answer = await call(base, 'GET', path, bearer(key));
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual(wallet.body);
    }
  });

  it('balance includes what is reserved; available is balance − reserved', async () => {
    const key = await openAccount(base, await mint.mintToken(10));
    const answer = await call(base, 'GET', '/v1/balance/info', bearer(key));
    expect(answer.body).toMatchObject({ balance: 10_000, reserved: 0, available: 10_000 });
  });

  it('POST /v1/balance/topup credits as /v1/wallet/topup does, once per token', async () => {
    const key = await openAccount(base, await mint.mintToken(10));
    const token = await mint.mintToken(21);
    const path = `/v1/balance/topup?ecash_token=${encodeURIComponent(token)}`;
    const first = await call(base, 'POST', path, bearer(key));
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ msats: 21_000, fee_msats: 0, balance: 31_000 });
    const second = await call(base, 'POST', path, bearer(key));
    expect(second.status).toBe(400);
    expect(second.body.error).toMatchObject({ code: 'cashu_token_already_spent', type: 'token_already_spent' });
  });

  it('POST /v1/balance/refund pays the balance out as /v1/wallet/refund does', async () => {
    const key = await openAccount(base, await mint.mintToken(10));
    const answer = await call(base, 'POST', '/v1/balance/refund', bearer(key));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ msats: 10_000, balance: 0, repeated: false });
    expect(typeof answer.body.token).toBe('string');
  });

  it('/openapi/proxy.json describes the /v1/balance routes and keeps the /v1/wallet ones', async () => {
    const { paths } = (await call(base, 'GET', '/openapi/proxy.json')).body;
    for (const prefix of ['/v1/wallet', '/v1/balance']) {
      expect(paths[`${prefix}/`].get).toBeTruthy();
      expect(paths[`${prefix}/info`].get).toBeTruthy();
      expect(paths[`${prefix}/topup`].post).toBeTruthy();
      expect(paths[`${prefix}/refund`].post).toBeTruthy();
    }
  });

  it('takes cashu_token in the query string, answering msats beside quartet’s fields', async () => {
    const key = await openAccount(base, await mint.mintToken(10));
    const token = encodeURIComponent(await mint.mintToken(21));
    const answer = await call(base, 'POST', `/v1/balance/topup?cashu_token=${token}`, bearer(key));
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ msats: 21_000, fee_msats: 0, balance: 31_000 });
  });

  it('takes cashu_token in a JSON body, on both prefixes', async () => {
    const key = await openAccount(base, await mint.mintToken(10));
    for (const prefix of ['/v1/wallet', '/v1/balance']) {
      const body = JSON.stringify({ cashu_token: await mint.mintToken(5) });
      const headers = { ...bearer(key), 'content-type': 'application/json' };
      const answer = await call(base, 'POST', `${prefix}/topup`, headers, body);
      expect(answer.status).toBe(200);
      expect(answer.body.msats).toBe(5_000);
    }
    expect((await call(base, 'GET', '/v1/balance/info', bearer(key))).body.balance).toBe(20_000);
  });

  it('with neither name, answers today’s 422 naming ecash_token', async () => {
    const answer = await call(base, 'POST', '/v1/balance/topup', bearer('sk-abc'));
    expect(answer.status).toBe(422);
    expect(answer.body.detail[0].loc).toEqual(['query', 'ecash_token']);
  });

  it('POST …/refund with X-Cashu alone refunds the account that token opened', async () => {
    const funding = await mint.mintToken(10);
    const key = await openAccount(base, funding);
    const answer = await call(base, 'POST', '/v1/balance/refund', { 'x-cashu': funding });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ msats: 10_000, balance: 0 });
    expect((await call(base, 'GET', '/v1/wallet/', bearer(key))).body.balance).toBe(0);
  });

  it("X-Cashu with a token that funded nothing answers 404 'Refund not found', as Routstr's node does", async () => {
    const answer = await call(base, 'POST', '/v1/wallet/refund', { 'x-cashu': await mint.mintToken(3) });
    expect(answer.status).toBe(404);
    expect(answer.body.detail).toBe('Refund not found');
  });

  it('GET and POST /v1/balance/create open an account from initial_balance_token', async () => {
    for (const method of ['GET', 'POST']) {
      const token = await mint.mintToken(7);
      const answer = await call(base, method, `/v1/balance/create?initial_balance_token=${encodeURIComponent(token)}`);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ balance: 7_000 });
      expect((await call(base, 'GET', '/v1/balance/info', bearer(answer.body.api_key))).body.balance).toBe(7_000);
    }
  });
});
