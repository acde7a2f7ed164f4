// Money under faults (issue 12, items 3–5): refund tokens the recovery finished late, refunds at
// a mint that charges input fees, tokens spent elsewhere at a mint without NUT-09 restore, and an
// upstream that lies about usage (items 3–6).
// Each scenario ends with the money invariant (money.ts): every msat the node took is in a
// balance, in its earnings, or paid back, and the mint's ledger agrees.
import { getTokenMetadata } from '@cashu/cashu-ts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { createTestDatabase, databaseKinds } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { chatBody, postJson, startNode, type Node } from './forward-helpers.js';
import { expectMoneyBalanced } from './money.js';
import { bearer, call, info, openAccount, receiveAtMint, refund, topup, waitFor } from './wallet-helpers.js';
import { startWalletNode, stopWalletNode } from './wallet-node.js';
import type { Answer } from './wallet-helpers.js';

const tokenSats = (token: string) => Number(getTokenMetadata(token).amount);

/** Calls refund until an answer repeats a token already received: every token it handed out. */
async function refundEverything(base: string, key: string): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let i = 0; i < 6; i++) {
    const answer = await refund(base, key);
    expect(answer.status, answer.text).toBe(200);
    if (answers.some((a) => a.body.token === answer.body.token)) return answers;
    answers.push(answer);
  }
  throw new Error('refund keeps handing out new tokens');
}

async function unfinishedOps(server: TestServer): Promise<number> {
  const unfinished = server.db.kysely.selectFrom('proxy_mint_ops').where('state', 'in', ['preparing', 'pending']);
  const open = await unfinished.select('id').execute();
  return open.length;
}

describe.each(databaseKinds)('refund tokens finished by the recovery on %s', (kind) => {
  let mint: DevMint;
  let server: TestServer;
  let base: string;
  const env = (recoveryMs = '200') => ({
    SERVICES: 'proxy',
    PROXY_MINTS: mint.url,
    PROXY_MINT_TIMEOUT_MS: '1000',
    PROXY_RECOVERY_INTERVAL_MS: recoveryMs,
  });

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    server = await startTestServer(kind, { env: env() });
    base = server.url;
  });
  afterEach(() => mint.faults.clear());
  afterAll(() => stopWalletNode({ mint, server }));

  it('the mint goes down during a refund and finishes it later: that token is handed out, not stranded', async () => {
    const key = await openAccount(base, await mint.mintToken(20));
    await mint.faults.set({ holdSwaps: true });
    const during = refund(base, key);
    await waitFor('the refund swap to reach the mint', async () => mint.faults.heldSwaps === 1);
    await mint.faults.set({ down: true }); // with the swap inside it
    const down = await during;
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('issue_pending');
    expect((await info(base, key)).body.balance).toBe(0);
    // Back up, the mint performs the swap it held; the recovery restores the token (NUT-09).
    await mint.faults.set({ down: false, holdSwaps: false });
    await waitFor('the recovery to finish the refund', async () => (await unfinishedOps(server)) === 0);

    expect((await topup(base, key, await mint.mintToken(5))).body).toMatchObject({ balance: 5_000 });
    const answers = await refundEverything(base, key);
    const paid = { fee_msats: 0, token: expect.any(String), mint: mint.url, unit: 'sat', unclaimed: 0 };
    expect(answers.map((a) => a.body)).toEqual([
      { ...paid, msats: 20_000, balance: 5_000, repeated: true }, // the late token first
      { ...paid, msats: 5_000, balance: 0, repeated: false },
    ]);
    let received = 0;
    for (const answer of answers) received += await receiveAtMint(mint.url, answer.body.token);
    expect(received).toBe(25);

    const listed = await call(base, 'GET', '/v1/wallet/refunds', bearer(key));
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      refunds: [
        expect.objectContaining({ state: 'done', msats: 5_000, fee_msats: 0, token: answers[1].body.token }),
        expect.objectContaining({ state: 'done', msats: 20_000, fee_msats: 0, token: answers[0].body.token }),
      ],
      next_before: null,
    });
    expect(listed.body.refunds.map((r: { claimed: boolean }) => r.claimed)).toEqual([true, true]);
    await expectMoneyBalanced(server.db);
  });

  it('a refund whose proofs another refund holds in flight waits for its change, not a 503', async () => {
    // Found by the fuzz suite: two refunds at once at one mint; the first reserves the largest
    // proofs (its change comes back when its swap ends), the second found too little unspent.
    const first = await openAccount(base, await mint.mintToken(20));
    const second = await openAccount(base, await mint.mintToken(20));
    await mint.faults.set({ holdSwaps: true });
    const firstRefund = refund(base, first);
    await waitFor('the first refund swap to reach the mint', async () => mint.faults.heldSwaps === 1);
    const secondRefund = refund(base, second);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await mint.faults.set({ holdSwaps: false });
    const answers = await Promise.all([firstRefund, secondRefund]);
    for (const answer of answers) {
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toMatchObject({ msats: 20_000, balance: 0 });
      expect(await receiveAtMint(mint.url, answer.body.token)).toBe(20);
    }
    await expectMoneyBalanced(server.db);
  });

  it('several late tokens: one per call, the oldest first, with the number still waiting', async () => {
    // A node whose recovery runs at start-up only, so both refunds stay pending until its restart.
    const database = await createTestDatabase(kind);
    const startOnly = () => startTestServer(kind, { env: env('86400000'), database });
    let node: TestServer | undefined = await startOnly();
    try {
      const key = await openAccount(node.url, await mint.mintToken(7));
      await mint.faults.set({ failSwaps: true });
      expect((await refund(node.url, key)).body.error.code).toBe('issue_pending');
      await mint.faults.set({ failSwaps: false });
      expect((await topup(node.url, key, await mint.mintToken(4))).body).toMatchObject({ balance: 4_000 });
      await mint.faults.set({ failSwaps: true });
      expect((await refund(node.url, key)).body.error.code).toBe('issue_pending');
      await mint.faults.set({ failSwaps: false });
      await node.close();
      node = undefined;
      const restarted = (node = await startOnly());
      await waitFor('the start-up recovery to finish both refunds', async () => (await unfinishedOps(restarted)) === 0);

      const pending = await call(restarted.url, 'GET', '/v1/wallet/refunds?limit=1', bearer(key));
      expect(pending.body.refunds).toEqual([expect.objectContaining({ state: 'done', msats: 4_000, claimed: false })]);
      const nextPage = `/v1/wallet/refunds?limit=1&before=${pending.body.next_before}`;
      const next = await call(restarted.url, 'GET', nextPage, bearer(key));
      expect(next.body.refunds).toEqual([expect.objectContaining({ state: 'done', msats: 7_000, claimed: false })]);

      const answers = await refundEverything(restarted.url, key);
      const seen = answers.map((a) => [a.body.msats, a.body.repeated, a.body.unclaimed]);
      expect(seen).toEqual([
        [7_000, true, 1],
        [4_000, true, 0],
      ]);
      expect(await receiveAtMint(mint.url, answers[0].body.token)).toBe(7);
      expect(await receiveAtMint(mint.url, answers[1].body.token)).toBe(4);
      await expectMoneyBalanced(restarted.db);
    } finally {
      await node?.close();
      await database.drop();
    }
  });

  it('GET /v1/wallet/refunds: its inputs are checked and it is described in /openapi/proxy.json', async () => {
    const key = await openAccount(base, await mint.mintToken(1));
    const none = await call(base, 'GET', '/v1/wallet/refunds', bearer(key));
    expect(none.body).toEqual({ refunds: [], next_before: null });
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'before=0', 'other=1']) {
      const answer = await call(base, 'GET', `/v1/wallet/refunds?${query}`, bearer(key));
      expect(answer.status, query).toBe(422);
      expect(answer.body.detail[0].loc[0]).toBe('query');
    }
    expect((await call(base, 'GET', '/v1/wallet/refunds')).status).toBe(422);
    expect((await call(base, 'GET', '/v1/wallet/refunds', bearer(`sk-${'0'.repeat(64)}`))).status).toBe(401);
    const spec = (await call(base, 'GET', '/openapi/proxy.json')).body;
    const route = spec.paths['/v1/wallet/refunds'].get;
    expect(route.parameters).toContainEqual(expect.objectContaining({ name: 'limit', in: 'query' }));
    // A refund answers a token, or (to a Lightning address) a payment: one of two shapes.
    const fields = (op: any) => {
      const schema = op.responses['200'].content['application/json'].schema;
      return (schema.anyOf ?? [schema]).flatMap((shape: any) => Object.keys(shape.properties));
    };
    expect(fields(route)).toEqual(['refunds', 'next_before']);
    const refundFields = fields(spec.paths['/v1/wallet/refund'].post);
    expect(refundFields).toEqual(expect.arrayContaining(['fee_msats', 'unclaimed', 'repeated']));
  });
});

describe.each(databaseKinds)('refunds at a mint that charges input fees on %s', (kind) => {
  let mint: DevMint;
  let server: TestServer;

  beforeAll(async () => {
    ({ mint, server } = await startWalletNode(kind, {}, { inputFeePpk: 400 }));
  });
  afterAll(() => stopWalletNode({ mint, server }));

  it('every user can leave, the last one too: the token is worth the refund minus the fee', async () => {
    const base = server.url;
    // 100 = 64 + 32 + 4 and 50 = 32 + 16 + 2: three inputs each, a fee of ceil(3 × 400 / 1000) = 2 sat.
    const first = await openAccount(base, await mint.mintToken(100));
    const second = await openAccount(base, await mint.mintToken(50));
    expect((await info(base, first)).body.balance).toBe(98_000);
    expect((await info(base, second)).body.balance).toBe(48_000);
    // The second leaves first; the first is then the last user at the mint.
    const answers = [await refund(base, second), await refund(base, first)];
    expect(answers.map((a) => [a.status, a.body.error?.code])).toEqual([
      [200, undefined],
      [200, undefined],
    ]);
    for (const [answer, msats] of [
      [answers[0], 48_000],
      [answers[1], 98_000],
    ] as const) {
      expect(answer.body).toMatchObject({ msats, balance: 0, repeated: false });
      // The node's proofs sum to each balance (32 + 16, 64 + 32 + 2): handed over without a swap.
      expect(answer.body.fee_msats).toBe(0);
      expect(tokenSats(answer.body.token) * 1000).toBe(msats - answer.body.fee_msats);
      expect(await receiveAtMint(mint.url, answer.body.token)).toBeGreaterThan(0);
    }
    const book = await expectMoneyBalanced(server.db);
    expect(book).toMatchObject({ takenMsat: 146_000, paidBackMsat: 146_000, heldMsat: 0 });
  });
});

describe.each(databaseKinds)('a mint without NUT-09 restore on %s', (kind) => {
  let mint: DevMint;
  let server: TestServer;
  let base: string;

  beforeAll(async () => {
    ({ mint, server, base } = await startWalletNode(kind, {
      PROXY_MINT_TIMEOUT_MS: '1000',
      PROXY_RECOVERY_INTERVAL_MS: '200',
    }));
  });
  afterEach(() => mint.faults.clear());
  afterAll(() => stopWalletNode({ mint, server }));

  it('a token spent elsewhere: refused at once (401 as bearer, 400 as top-up), never retried', async () => {
    const key = await openAccount(base, await mint.mintToken(3));
    const [asBearer, asTopup] = [await mint.mintToken(9), await mint.mintToken(6)];
    await mint.faults.set({ noRestore: true });
    for (const t of [asBearer, asTopup]) await receiveAtMint(mint.url, t); // spent by someone else
    for (let i = 0; i < 2; i++) {
      const asCredential = await info(base, asBearer);
      expect(asCredential.status, asCredential.text).toBe(401);
      expect(asCredential.body.detail.error.code).toBe('invalid_api_key');
      expect(asCredential.body.detail.error.message).toContain('proofs already spent');
      const asPayment = await topup(base, key, asTopup);
      expect(asPayment.status, asPayment.text).toBe(400);
      expect(asPayment.body.error).toMatchObject({ code: 'cashu_token_already_spent', type: 'token_already_spent' });
    }
    expect(await unfinishedOps(server)).toBe(0);
    expect((await info(base, key)).body.balance).toBe(3_000);
    await expectMoneyBalanced(server.db);
  });

  it('a swap whose answer was lost may be ours: it stays pending, and is credited once restore is back', async () => {
    const key = await openAccount(base, await mint.mintToken(5));
    const t = await mint.mintToken(12);
    await mint.faults.set({ noRestore: true, loseSwapResponses: true });
    const lost = await topup(base, key, t);
    expect(lost.status).toBe(503);
    expect(lost.body.error.code).toBe('redemption_pending');
    await mint.faults.set({ loseSwapResponses: false });
    // The recovery retries it (a resend is refused: spent, by us), and must not give up on it.
    const op = () =>
      server.db.kysely
        .selectFrom('proxy_mint_ops')
        .select(['state', 'attempts'])
        .where('kind', '=', 'redeem')
        .orderBy('id', 'desc')
        .executeTakeFirstOrThrow();
    await waitFor('two recovery attempts', async () => Number((await op()).attempts) >= 2);
    expect((await op()).state).toBe('pending');
    expect((await info(base, key)).body.balance).toBe(5_000);
    await mint.faults.set({ noRestore: false });
    await waitFor('the top-up to be credited', async () => (await info(base, key)).body.balance === 17_000);
    expect((await topup(base, key, t)).status).toBe(400);
    await expectMoneyBalanced(server.db);
  });
});

describe.each(databaseKinds)('an upstream that lies about usage, paid with real tokens, on %s', (kind) => {
  // Issue 12 item 6 with the money invariant: absurd, negative and unreadable usage is billed at
  // most the reservation, and every msat taken is still in a balance, the earnings or a refund.
  let mint: DevMint;
  let node: Node;
  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    node = await startNode(kind, { env: { PROXY_MINTS: mint.url } });
  });
  afterAll(async () => {
    await node?.close();
    await mint?.close();
  });

  const LIES = [
    '{"prompt_tokens":1e15,"completion_tokens":1e15}',
    '{"prompt_tokens":-5,"completion_tokens":-1}',
    '"lots"',
  ];

  it.each(LIES)('usage %s, from a balance and by X-Cashu, then a refund', async (usage) => {
    node.upstream.faults.usage = usage;
    const key = await openAccount(node.url, await mint.mintToken(50));
    const paid = await postJson(`${node.url}/v1/chat/completions`, chatBody({ max_tokens: 40 }), bearer(key));
    expect(paid.status, paid.text).toBe(200);
    const charged = Number(paid.headers.get('x-cashu-cost-msat'));
    expect(charged).toBeGreaterThan(0);
    // Never above the ceiling: the prompt at one token a byte, 40 output tokens, the request fee.
    const ceiling = Buffer.byteLength(JSON.stringify(chatBody({ max_tokens: 40 }))) + 40 * 2 + 10;
    expect(charged).toBeLessThanOrEqual(ceiling);

    const perRequest = await postJson(`${node.url}/v1/chat/completions`, chatBody({ max_tokens: 40 }), {
      'x-cashu': await mint.mintToken(20),
    });
    expect(perRequest.status, perRequest.text).toBe(200);
    const change = perRequest.headers.get('x-cashu');
    if (change) expect(await receiveAtMint(mint.url, change)).toBeGreaterThan(0);

    const back = await refund(node.url, key);
    expect(back.status, back.text).toBe(200);
    // A sat token carries whole sats; the msats below one sat stay in the balance.
    const left = 50_000 - charged;
    expect(back.body).toMatchObject({ msats: left - (left % 1000), balance: left % 1000 });
    await expectMoneyBalanced(node.server.db);
  });
});

describe.each(databaseKinds)('refunds at a 100 ppk mint (issue 30) on %s', (kind) => {
  let mint: DevMint;
  let node: Node;
  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 100, port: 0 });
    node = await startNode(kind, { env: { PROXY_MINTS: mint.url, PROXY_MINT_TIMEOUT_MS: '2000' } });
  });
  afterAll(async () => {
    await node?.close();
    await mint?.close();
  });
  const unspentProofs = async () => {
    const rows = await node.server.db.kysely
      .selectFrom('proxy_proofs')
      .select(['amount'])
      .where('state', '=', 'unspent')
      .execute();
    return rows.map((r) => Number(r.amount));
  };

  it('hands over proofs that already sum to the balance: no swap, no fee on the node side', async () => {
    // 117 = 64 + 32 + 16 + 4 + 1: five inputs, 1 sat of fee; 116 credited, held as 64 + 32 + 16 + 4.
    const key = await openAccount(node.url, await mint.mintToken(117));
    expect((await info(node.url, key)).body.balance).toBe(116_000);
    const answer = await refund(node.url, key);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ msats: 116_000, fee_msats: 0, balance: 0 });
    expect(tokenSats(answer.body.token)).toBe(116);
    // The recipient's own swap of its four proofs costs it 1 sat (before: 114 in the token, 113 redeemed).
    expect(await receiveAtMint(mint.url, answer.body.token)).toBe(115);
    expect(await unspentProofs()).toEqual([]);
    await expectMoneyBalanced(node.server.db);
  });

  it('a swap costs the node at most 1 sat, says so, and merges small proofs into its change', async () => {
    const key = await openAccount(node.url, await mint.mintToken(117)); // held as 64 + 32 + 16 + 4
    // Eight other users leave a proof of 2 sat each (3 = 2 + 1: two inputs, 1 sat of fee).
    for (let i = 0; i < 8; i++) await openAccount(node.url, await mint.mintToken(3));
    // A request: the balance (115 whole sats and some msat) is no longer a sum of held proofs.
    const chat = await postJson(`${node.url}/v1/chat/completions`, chatBody(), bearer(key));
    expect(chat.status, chat.text).toBe(200);
    expect(Number(chat.headers.get('x-cashu-cost-msat'))).toBeLessThan(1000);
    const before = await unspentProofs();
    expect(before).toHaveLength(12);
    const answer = await refund(node.url, key);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.msats).toBe(115_000);
    // 64 + 32 + 16 + 4 in, 1 sat of fee (ceil(4 × 100 / 1000)), said in the answer.
    expect(answer.body.fee_msats).toBe(1000);
    expect(tokenSats(answer.body.token) * 1000).toBe(answer.body.msats - answer.body.fee_msats);
    expect(await receiveAtMint(mint.url, answer.body.token)).toBeGreaterThan(0);
    // Six of the 2-sat proofs rode along for free (ten inputs still cost 1 sat): the change,
    // 116 + 12 − 115 = 13 = 8 + 4 + 1, holds them merged. Twelve proofs became five.
    const after = await unspentProofs();
    expect(after.sort((a, b) => b - a)).toEqual([8, 4, 2, 2, 1]);
    await expectMoneyBalanced(node.server.db);
  });

  it("streams an X-Cashu answer with its change in the header, the node's proofs handed over", async () => {
    // 18 = 16 + 2: 1 sat of fee to redeem; 17 sat for the request, its change in the header.
    const token = await mint.mintToken(18);
    const response = await fetch(`${node.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-cashu': token },
      body: JSON.stringify(chatBody({ stream: true })),
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('data: [DONE]');
    const charged = Number(response.headers.get('x-cashu-cost-msat'));
    const change = response.headers.get('x-cashu')!;
    expect(tokenSats(change) * 1000 + charged + 1000).toBe(18_000);
    expect(await receiveAtMint(mint.url, change)).toBe(tokenSats(change) - 1);
    await expectMoneyBalanced(node.server.db);
  });
});
