// The errors Routstr's clients branch on (docs/proxy-wallet.md#errors): each failure a client can
// meet, sent as routstr-sdk sends it, must be recognisable by `error.type`/`error.code` (today's
// clients), by `detail.error.code` or the `detail` string (older ones), and carry the request's id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { type Answer, request } from '../support/http.js';
import { chatBody, startNode, type Node } from './forward-helpers.js';

/** What a Routstr client reads of an error answer. */
function expectRoutstrError(answer: Answer, status: number, type: string, code: string) {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.json.error).toMatchObject({ type, code, message: expect.any(String) });
  expect(answer.json.detail.error).toEqual(answer.json.error);
  expect(answer.json.request_id).toBe(answer.headers.get('x-request-id'));
}

describe("errors in Routstr's taxonomy", () => {
  let mint: DevMint;
  let node: Node;
  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    node = await startNode('sqlite', { env: { PROXY_MINTS: mint.url, PROXY_MINT_TIMEOUT_MS: '1000' } });
  });
  afterAll(async () => {
    await node?.close();
    await mint?.close();
  });

  const chat = (headers: Record<string, string>) =>
    request(`${node.url}/v1/chat/completions`, 'POST', { json: chatBody(), headers });

  it('a token spent before: token_already_spent / cashu_token_already_spent', async () => {
    const token = await mint.mintToken(20);
    expect((await chat({ 'x-cashu': token })).status).toBe(200);
    // The account it opened is empty now; a top-up with it is a second redemption.
    const key = await node.account(10_000);
    const again = await request(`${node.url}/v1/balance/topup`, 'POST', { token: key, json: { cashu_token: token } });
    expectRoutstrError(again, 400, 'token_already_spent', 'cashu_token_already_spent');
  });

  it('what is no token: invalid_token / invalid_cashu_token', async () => {
    expectRoutstrError(await chat({ 'x-cashu': 'cashuBnonsense' }), 400, 'invalid_token', 'invalid_cashu_token');
  });

  it('an unknown or malformed key: invalid_api_key', async () => {
    const unknown = await chat({ authorization: `Bearer sk-${'0'.repeat(64)}` });
    expectRoutstrError(unknown, 401, 'invalid_request_error', 'invalid_api_key');
    // The words on which Routstr's clients drop a key for good.
    expect(unknown.json.error.message).toContain('Key not found');
    expectRoutstrError(await chat({ authorization: 'Basic x' }), 401, 'invalid_request_error', 'invalid_api_key');
  });

  it('too little: insufficient_quota for a key, minimum_balance_required for an X-Cashu token', async () => {
    const poor = await node.account(1);
    expectRoutstrError(
      await chat({ authorization: `Bearer ${poor}` }),
      402,
      'insufficient_quota',
      'insufficient_balance',
    );
    const small = await request(`${node.url}/v1/chat/completions`, 'POST', {
      json: chatBody({ messages: [{ role: 'user', content: 'x'.repeat(8000) }] }),
      headers: { 'x-cashu': await mint.mintToken(1) },
    });
    expectRoutstrError(small, 402, 'minimum_balance_required', 'insufficient_balance');
    // The whole token comes back with the refusal, where the clients look for change.
    expect(small.headers.get('x-cashu')).toMatch(/^cashu[AB]/);
  });

  it('an untrusted mint: mint_error / cashu_foreign_mint_swap_failed (clients try another mint)', async () => {
    const other = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    try {
      const foreign = await other.mintToken(10);
      expectRoutstrError(await chat({ 'x-cashu': foreign }), 400, 'mint_error', 'cashu_foreign_mint_swap_failed');
    } finally {
      await other.close();
    }
  });

  it('the mint down: mint_unreachable / cashu_mint_unreachable, the token untouched', async () => {
    const token = await mint.mintToken(10);
    await mint.faults.set({ down: true });
    try {
      expectRoutstrError(await chat({ 'x-cashu': token }), 503, 'mint_unreachable', 'cashu_mint_unreachable');
    } finally {
      await mint.faults.set({ down: false });
    }
    expect((await chat({ 'x-cashu': token })).status).toBe(200);
  });

  it("nothing to refund: the detail string Routstr's older clients compare", async () => {
    const empty = await node.account(0);
    const answer = await request(`${node.url}/v1/balance/refund`, 'POST', { token: empty });
    expect(answer.status).toBe(400);
    expect(answer.json.error.code).toBe('no_balance_to_refund');
    expect(answer.json.detail).toBe('No balance to refund');
  });

  it("keeps the seed's FastAPI 422 for a missing input", async () => {
    const answer = await request(`${node.url}/v1/wallet/topup`, 'POST', { token: await node.account(0) });
    expect(answer.status).toBe(422);
    expect(answer.json).toEqual({
      detail: [{ loc: ['query', 'ecash_token'], msg: 'Field required', type: 'missing' }],
    });
  });
});
