// The wallet against a misbehaving mint (the dev mint's fault switch): slow, failing, lying,
// answers lost; a rotated keyset (mint down: wallet.test.ts). Nothing stands between the node
// and the mint: a lost answer is recovered with the dev mint's own NUT-09 restore. Money must
// end where it belongs: credited once, or the token untouched.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DevMint } from '../../src/devmint/index.js';
import { databaseKinds } from '../support/databases.js';
import type { TestServer } from '../support/server.js';
import { expectMoneyBalanced } from './money.js';
import { info, openAccount, receiveAtMint, refund, topup, waitFor } from './wallet-helpers.js';
import { startWalletNode, stopWalletNode } from './wallet-node.js';

/** A short mint timeout and a recovery pass every 200 ms, so faults resolve within a test. */
const RECOVERY_ENV = { PROXY_MINT_TIMEOUT_MS: '1000', PROXY_RECOVERY_INTERVAL_MS: '200' };

describe.each(databaseKinds)('wallet against a misbehaving mint on %s', (kind) => {
  let mint: DevMint;
  let server: TestServer;
  let base: string;
  const token = (amount: number) => mint.mintToken(amount);

  beforeAll(async () => {
    ({ mint, server, base } = await startWalletNode(kind, RECOVERY_ENV));
  });
  afterEach(async () => {
    await mint.faults.clear();
  });
  afterAll(() => stopWalletNode({ mint, server }));

  it('a swap whose answer is lost is finished at once from the journal (checkstate + restore)', async () => {
    const key = await openAccount(base, await token(5));
    // The mint performs the swap, then cuts the connection without an answer.
    await mint.faults.set({ loseSwapResponses: true });
    const answer = await topup(base, key, await token(34));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ msats: 34_000, balance: 39_000 });
  });

  it('a slow mint: 503 pending, then credited exactly once by the background recovery', async () => {
    const key = await openAccount(base, await token(5));
    await mint.faults.set({ delayMs: 1500 });
    const t = await token(8);
    const slow = await topup(base, key, t);
    expect(slow.status).toBe(503);
    expect(slow.body.error.code).toBe('redemption_pending');
    await mint.faults.set({ delayMs: 0 });
    await waitFor('the pending top-up to be credited', async () => (await info(base, key)).body.balance === 13_000);
    const retry = await topup(base, key, t);
    expect(retry.status).toBe(400);
    expect((await info(base, key)).body.balance).toBe(13_000);
  });

  it('a lying mint: nothing credited, the token still good afterwards', async () => {
    const key = await openAccount(base, await token(5));
    const t = await token(9);
    await mint.faults.set({ lie: true });
    for (let i = 0; i < 5; i++) {
      const answer = await topup(base, key, t);
      expect([409, 502, 503]).toContain(answer.status); // 409: the recovery loop is retrying it right now
    }
    expect((await info(base, key)).body.balance).toBe(5_000);
    await mint.faults.set({ lie: false });
    await waitFor('the token to be credited once the mint is honest', async () => {
      const answer = await topup(base, key, t);
      return answer.status === 200 || (await info(base, key)).body.balance === 14_000;
    });
    expect((await info(base, key)).body.balance).toBe(14_000);
  });

  it('refund: a mint refusing the swap gives the debit back', async () => {
    const key = await openAccount(base, await token(20));
    // Opening the account cached the mint's keysets; the rotation makes the cached active
    // keyset inactive, so the refund's outputs are refused (the client then reads them again).
    mint.rotateKeyset();
    const refused = await refund(base, key);
    expect(refused.status).toBe(502);
    expect(refused.body.error.code).toBe('mint_refused');
    expect((await info(base, key)).body).toMatchObject({ balance: 20_000, available: 20_000 });
    const retry = await refund(base, key);
    expect(retry.status).toBe(200);
    expect(await receiveAtMint(mint.url, retry.body.token)).toBe(20);
  });

  it('refund: an answer lost on the way is fetched again by the next call', async () => {
    const key = await openAccount(base, await token(11));
    await mint.faults.set({ failSwaps: true });
    const pending = await refund(base, key);
    expect(pending.status).toBe(503);
    expect(pending.body.error.code).toBe('issue_pending');
    expect((await info(base, key)).body.balance).toBe(0);
    await mint.faults.set({ failSwaps: false });
    const fetched = await waitFor('the refund token', async () => {
      const answer = await refund(base, key);
      return answer.status === 200 ? answer : null;
    });
    expect(fetched.body).toMatchObject({ msats: 11_000, repeated: true });
    expect(await receiveAtMint(mint.url, fetched.body.token)).toBe(11);
  });

  it('after all of the above, every msat the node took is in a balance or paid back', async () => {
    await expectMoneyBalanced(server.db);
  });
});

// A retry of the same request must finish a pending top-up by itself. The background recovery
// is a second driver of the same operation: while it holds the operation's lease a retry is
// answered 409 (one driver at a time), and once it has finished, 400 (the token is spent). So
// this node runs its recovery pass at start-up only, and the retry is the one driver there is.
describe.each(databaseKinds)('a retry with no background recovery on %s', (kind) => {
  let mint: DevMint;
  let server: TestServer;

  beforeAll(async () => {
    ({ mint, server } = await startWalletNode(kind, { ...RECOVERY_ENV, PROXY_RECOVERY_INTERVAL_MS: '86400000' }));
  });
  afterAll(() => stopWalletNode({ mint, server }));

  it('failing swaps (500): pending, and a retry of the same request finishes it', async () => {
    const base = server.url;
    const key = await openAccount(base, await mint.mintToken(5));
    await mint.faults.set({ failSwaps: true });
    const t = await mint.mintToken(16);
    const failed = await topup(base, key, t);
    expect(failed.status).toBe(503);
    expect(failed.body.error.code).toBe('redemption_pending');
    // A 500 may hide a swap the mint still completes, so the operation stays journaled, pending,
    // and free for the next attempt (no lease held).
    const op = await server.db.kysely
      .selectFrom('proxy_mint_ops')
      .select(['state', 'lease_until'])
      .where('kind', '=', 'redeem')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect({ state: op.state, lease_until: Number(op.lease_until) }).toEqual({ state: 'pending', lease_until: 0 });
    expect((await info(base, key)).body.balance).toBe(5_000);
    await mint.faults.set({ failSwaps: false });
    const retry = await topup(base, key, t);
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ msats: 16_000, balance: 21_000 });
    const again = await topup(base, key, t);
    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe('cashu_token_already_spent');
    expect((await info(base, key)).body.balance).toBe(21_000);
    await expectMoneyBalanced(server.db);
  });
});
