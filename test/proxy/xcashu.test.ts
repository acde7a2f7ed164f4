// Per-request payment (NUT-24 style): a Cashu token in X-Cashu pays one request; the change
// comes back as a token in the X-Cashu response header (a stream is answered whole for it, unless
// X-Cashu-Stream: live asks for it live: then its change comes by refund with the same X-Cashu).
import { getTokenMetadata } from '@cashu/cashu-ts';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { databaseKinds } from '../support/databases.js';
import { chatBody, postJson, startNode, testCost, TEST_MODEL, type Node } from './forward-helpers.js';
import { sendChat, startHoldingUpstream } from './holding.js';
import { apiKeyForToken, keyHash } from '../../src/proxy/keys/accounts.js';
import { refundAddressOf } from '../../src/proxy/lightning/store.js';
import { receiveAtMint, waitFor } from './wallet-helpers.js';

const tokenSats = (token: string) => Number(getTokenMetadata(token).amount);

describe.each(databaseKinds)('X-Cashu payments on %s', (kind) => {
  let mint: DevMint;
  let node: Node;
  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    node = await startNode(kind, { env: { PROXY_MINTS: mint.url, PROXY_MINT_TIMEOUT_MS: '2000' } });
  });
  afterAll(async () => {
    await node?.close();
    await mint?.close();
  });
  beforeEach(() => node.upstream.resetFaults());

  it('redeems the token, bills the request and returns the change, correct to the msat', async () => {
    const token = await mint.mintToken(100);
    const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody(), { 'x-cashu': token });
    expect(answer.status).toBe(200);
    const charged = Number(answer.headers.get('x-cashu-cost-msat'));
    const change = answer.headers.get('x-cashu')!;
    expect(change).toMatch(/^cashu[AB]/);
    // Change is a sat token, so the charge is the usage cost rounded up to a whole sat.
    expect(charged).toBe(Math.ceil(testCost(answer.json.usage) / 1000) * 1000);
    expect(charged + tokenSats(change) * 1000).toBe(100_000);
    expect(answer.json.cost).toMatchObject({ total_msat: charged, change_msat: 100_000 - charged });
    expect(await receiveAtMint(mint.url, change)).toBe(100 - charged / 1000);

    // The token was spent once: at the mint, and at the node (its account is empty now).
    expect(await receiveAtMint(mint.url, token).catch((e) => String(e))).toMatch(/spent/i);
    // Sent again it is a spent token as a credential, answered as Routstr's SDK drops a token (not
    // a 402, on which it would try again).
    const again = await postJson(`${node.url}/v1/chat/completions`, chatBody(), { 'x-cashu': token });
    expect(again.status).toBe(401);
    expect(again.json.detail.error.code).toBe('invalid_api_key');
    expect(again.json.detail.error.message).toContain('proofs already spent');
    expect(again.headers.get('x-cashu')).toBeNull();
    const rows = (await node.ledger()).filter((row) => row.payment === 'x-cashu');
    expect(rows.filter((row) => row.status === 'settled')).toHaveLength(1);
  });

  it('works with the openai SDK sending X-Cashu', async () => {
    const token = await mint.mintToken(50);
    const client = new OpenAI({
      baseURL: `${node.url}/v1`,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'X-Cashu': token },
    });
    const { data, response } = await client.chat.completions
      .create({ model: TEST_MODEL, messages: [{ role: 'user', content: 'pay per request' }] })
      .withResponse();
    const charged = Number(response.headers.get('x-cashu-cost-msat'));
    expect(charged).toBe(Math.ceil(testCost(data.usage!) / 1000) * 1000);
    expect(tokenSats(response.headers.get('x-cashu')!) * 1000 + charged).toBe(50_000);
  });

  it("answers a stream whole with its change in X-Cashu, where Routstr's SDK reads it, to the msat", async () => {
    const token = await mint.mintToken(18);
    const response = await fetch(`${node.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-cashu': token },
      body: JSON.stringify(chatBody({ stream: true, max_tokens: 5000 })),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    // In the headers, as a JSON answer has them: the change and the cost.
    const change = response.headers.get('x-cashu')!;
    expect(change).toMatch(/^cashu[AB]/);
    const charged = Number(response.headers.get('x-cashu-cost-msat'));
    expect(response.headers.get('x-routstr-cost-msats')).toBe(String(charged));
    expect(charged).toBeGreaterThan(0);
    expect(tokenSats(change) * 1000 + charged).toBe(18_000);
    const text = await response.text();
    expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    const events = text.split('\n\n').filter((e) => e.trim());
    expect(events.at(-1)).toBe('data: [DONE]');
    const content = events.slice(0, -2).map((e) => JSON.parse(e.slice(6)).choices[0]?.delta?.content ?? '');
    expect(content.join('').length).toBeGreaterThan(0);
    const usageChunk = JSON.parse(events.at(-2)!.slice(6));
    expect(usageChunk.cost).toMatchObject({ total_msat: charged, change_msat: 18_000 - charged });
    expect(usageChunk.cost.change).toBeUndefined(); // the token is in the header only
    expect(await receiveAtMint(mint.url, change)).toBe(tokenSats(change));
    // Nothing waits for a refund: the token's account is empty, a refund repeats the change.
    const after = await postJson(`${node.url}/v1/balance/refund`, undefined, { 'x-cashu': token });
    expect(after.json).toMatchObject({ token: change, repeated: true, balance: 0 });
  });

  it('gives the whole payment back in X-Cashu when the upstream breaks the stream it reads', async () => {
    node.upstream.faults.resetAfterChunks = 2;
    const token = await mint.mintToken(30);
    const response = await fetch(`${node.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-cashu': token },
      body: JSON.stringify(chatBody({ stream: true, max_tokens: 500 })),
    });
    // Nothing was delivered: nothing charged, an error answer with the whole payment as change.
    expect(response.status).toBe(502);
    expect(tokenSats(response.headers.get('x-cashu')!)).toBe(30);
  });

  it('with X-Cashu-Stream: live, streams live and keeps the change for a refund by the same X-Cashu', async () => {
    const token = await mint.mintToken(64);
    const response = await fetch(`${node.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-cashu': token, 'x-cashu-stream': 'live' },
      body: JSON.stringify(chatBody({ stream: true, max_tokens: 5000 })),
    });
    // Headers leave before the cost is known: no change in them (a client that got some there would
    // forget the token and never fetch the rest).
    expect(response.headers.get('x-cashu')).toBeNull();
    const text = await response.text();
    const chunks = text
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)));
    const cost = chunks.at(-1).cost;
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(cost.refundable_msat).toBe(64_000 - cost.total_msat);
    const refund = await postJson(`${node.url}/v1/balance/refund`, undefined, { 'x-cashu': token });
    expect(refund.status).toBe(200);
    expect(refund.headers.get('x-cashu')).toBe(refund.json.token);
    expect(tokenSats(refund.json.token) * 1000 + cost.total_msat).toBe(64_000);
    expect(await receiveAtMint(mint.url, refund.json.token)).toBe(tokenSats(refund.json.token));
  });

  it('keeps the Refund-LNURL address a token names at its first use, a streamed chat too', async () => {
    const token = await mint.mintToken(64);
    const response = await fetch(`${node.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        'refund-lnurl': 'alice@wallet.example',
      },
      body: JSON.stringify(chatBody({ stream: true })),
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('data: [DONE]');
    // Kept once the answer is over (a billed stream writes its reply itself).
    const account = await node.server.db.kysely
      .selectFrom('proxy_accounts')
      .select('id')
      .where('key_hash', '=', keyHash(apiKeyForToken(token)))
      .executeTakeFirstOrThrow();
    const kept = await waitFor('the refund address', () => refundAddressOf(node.server.db.kysely, account.id));
    expect(kept).toBe('alice@wallet.example');
  });

  it('answers a refund by X-Cashu 404 for a token that paid nothing here', async () => {
    const unused = await mint.mintToken(5);
    const none = await postJson(`${node.url}/v1/balance/refund`, undefined, { 'x-cashu': unused });
    expect(none.status).toBe(404);
    expect(none.json).toMatchObject({ detail: 'Refund not found', error: { code: 'refund_not_found' } });
  });

  it("answers a spent token as a credential as Routstr's SDK drops a key: 401 invalid_api_key", async () => {
    const spent = await mint.mintToken(8);
    await receiveAtMint(mint.url, spent); // spent by its owner elsewhere
    const asBearer = await fetch(`${node.url}/v1/wallet/info`, { headers: { authorization: `Bearer ${spent}` } });
    const asXCashu = await postJson(`${node.url}/v1/chat/completions`, chatBody(), { 'x-cashu': spent });
    for (const [status, body] of [
      [asBearer.status, await asBearer.json()],
      [asXCashu.status, asXCashu.json],
    ]) {
      // What BalanceManager.getTokenBalance checks, word for word.
      expect(status).toBe(401);
      expect(body.detail.error.code).toBe('invalid_api_key');
      expect(body.detail.error.message).toContain('proofs already spent');
      expect(body.error).toEqual(body.detail.error);
    }
  });

  it('pays a write on an unpriced path, the change in X-Cashu', async () => {
    const token = await mint.mintToken(10);
    const answer = await fetch(`${node.url}/debug/echo`, {
      method: 'POST',
      headers: { 'x-cashu': token, 'content-type': 'text/plain' },
      body: 'upload',
    });
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe('upload');
    expect(answer.headers.get('x-cashu-cost-msat')).toBe('1000');
    expect(tokenSats(answer.headers.get('x-cashu')!)).toBe(9);
  });

  it('returns the whole payment as change when the upstream fails', async () => {
    node.upstream.faults.status = 500;
    const token = await mint.mintToken(20);
    const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody(), { 'x-cashu': token });
    expect(answer.status).toBe(500);
    expect(tokenSats(answer.headers.get('x-cashu')!)).toBe(20);
  });

  it('takes X-Cashu over an Authorization header the SDK always sends', async () => {
    const key = await node.account(1_000_000);
    const token = await mint.mintToken(30);
    const answer = await postJson(`${node.url}/v1/chat/completions`, chatBody(), {
      'x-cashu': token,
      authorization: `Bearer ${key}`,
    });
    expect(answer.status).toBe(200);
    expect((await node.balance(key)).balance).toBe(1_000_000);
  });

  it('gives a token too small for the request back whole, with the 402', async () => {
    const token = await mint.mintToken(1);
    const answer = await postJson(
      `${node.url}/v1/chat/completions`,
      chatBody({ messages: [{ role: 'user', content: 'x'.repeat(3000) }] }),
      { 'x-cashu': token },
    );
    expect(answer.status).toBe(402);
    expect(answer.json.error.code).toBe('insufficient_balance');
    expect(tokenSats(answer.headers.get('x-cashu')!)).toBe(1);
  });

  it('counts new X-Cashu tokens against the per-address redemption limit', async () => {
    const limited = await startNode(kind, {
      upstream: node.upstream,
      env: { PROXY_MINTS: mint.url, PROXY_REDEEM_LIMIT_PER_MINUTE: '1' },
    });
    try {
      const first = await postJson(`${limited.url}/v1/chat/completions`, chatBody(), {
        'x-cashu': await mint.mintToken(5),
      });
      expect(first.status).toBe(200);
      const token = await mint.mintToken(5);
      const second = await postJson(`${limited.url}/v1/chat/completions`, chatBody(), { 'x-cashu': token });
      expect(second.status).toBe(429);
      expect(second.headers.get('retry-after')).toMatch(/^\d+$/);
      // Refused before any swap: the token is still good.
      expect(await receiveAtMint(mint.url, token)).toBe(5);
    } finally {
      await limited.server.close();
    }
  });

  it('refuses what is not a token, and tokens of untrusted mints', async () => {
    const garbage = await postJson(`${node.url}/v1/chat/completions`, chatBody(), { 'x-cashu': 'not-a-token' });
    expect(garbage.status).toBe(400);
    expect(garbage.json.error.code).toBe('invalid_cashu_token');
    const other = await startDevMint({ unit: 'sat', port: 0 });
    try {
      const foreign = await postJson(`${node.url}/v1/chat/completions`, chatBody(), {
        'x-cashu': await other.mintToken(10),
      });
      expect(foreign.status).toBe(400);
      expect(foreign.json.error.message).toContain(mint.url);
    } finally {
      await other.close();
    }
  });
});

describe.each(databaseKinds)('an X-Cashu stream whose caller leaves on %s', (kind) => {
  it('is not billed, and the whole payment stays refundable by the same X-Cashu', async () => {
    const mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    const upstream = await startHoldingUpstream();
    const node = await startNode(kind, { env: { PROXY_MINTS: mint.url, PROXY_UPSTREAM_URL: upstream.url } });
    try {
      const token = await mint.mintToken(40);
      const chat = sendChat(node, { xCashu: token }, { stream: true });
      const [held] = await upstream.received(1);
      held.startStream();
      chat.leave(); // while the node reads the stream to its end, before a byte was answered
      expect(await held.closed).toBe(true);
      const refund = await waitFor('the change to be refundable', async () => {
        const answer = await postJson(`${node.url}/v1/balance/refund`, undefined, { 'x-cashu': token });
        return answer.status === 200 ? answer : null;
      });
      expect(tokenSats(refund.json.token)).toBe(40);
      expect(refund.headers.get('x-cashu')).toBe(refund.json.token);
    } finally {
      await node.close();
      await upstream.close();
      await mint.close();
    }
  });
});

describe('a refund by X-Cashu while the request it pays still runs', () => {
  it('answers 425 with Retry-After, then the change once the stream is settled', async () => {
    const mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    const upstream = await startHoldingUpstream();
    const node = await startNode('sqlite', { env: { PROXY_MINTS: mint.url, PROXY_UPSTREAM_URL: upstream.url } });
    try {
      const token = await mint.mintToken(64);
      const chat = sendChat(node, { xCashu: token, live: true }, { stream: true });
      const [held] = await upstream.received(1);
      held.startStream();
      await chat.firstByte();
      const early = await postJson(`${node.url}/v1/balance/refund`, undefined, { 'x-cashu': token });
      expect(early.status).toBe(425);
      expect(early.headers.get('retry-after')).toBe('2');
      expect(early.json).toMatchObject({
        detail: 'Refund is pending; retry shortly.',
        error: { code: 'refund_pending' },
      });
      held.endStream({ prompt_tokens: 10, completion_tokens: 20 });
      await chat.done();
      const refund = await postJson(`${node.url}/v1/balance/refund`, undefined, { 'x-cashu': token });
      expect(refund.status).toBe(200);
      // 10 + 2 × 20 + 10 msat, rounded up to the sat an X-Cashu payment is charged in.
      expect(tokenSats(refund.json.token)).toBe(63);
    } finally {
      await node.close();
      await upstream.close();
      await mint.close();
    }
  });
});
