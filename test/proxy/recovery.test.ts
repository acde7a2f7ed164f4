// Crash tests: the node runs as a child process and is killed with SIGKILL in the middle of a
// top-up and of a refund, at two points each: after the swap reached the mint (the mint does it,
// the node never hears back) and before it reached the mint. After a restart on the same
// database the start-up recovery must put the money where it belongs, exactly once.
import { getDecodedToken, getEncodedToken } from '@cashu/cashu-ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { parseDatabaseUrl } from '../../src/config.js';
import { openDatabase } from '../../src/db/index.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';
import { startTestServer } from '../support/server.js';
import { startRestoreGateway, type RestoreGateway } from './fixtures/wallet-restore-gateway.js';
import { startNodeProcess, type NodeProcess } from './fixtures/wallet-node.js';
import { info, openAccount, receiveAtMint, refund, topup, waitFor } from './wallet-helpers.js';

describe.each(databaseKinds)('crash recovery on %s', (kind) => {
  let mint: DevMint;
  let gateway: RestoreGateway;
  let database: TestDatabase;
  let node: NodeProcess | undefined;
  let env: Record<string, string>;
  const token = async (amount: number) => {
    const decoded = getDecodedToken(await mint.mintToken(amount), [mint.keysetId()]);
    return getEncodedToken({ ...decoded, mint: gateway.url });
  };

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    gateway = await startRestoreGateway(mint.url);
    database = await createTestDatabase(kind);
    // Lease = 6 x the mint timeout: a restarted node takes over an interrupted operation after ~6 s.
    env = { DATABASE_URL: database.url, PROXY_MINTS: gateway.url, PROXY_MINT_TIMEOUT_MS: '1000', PROXY_RECOVERY_INTERVAL_MS: '250' };
  });
  afterAll(async () => {
    await node?.stop();
    await gateway?.close();
    await mint?.close();
    await database?.drop();
  });

  /** Starts a top-up and a refund, kills the node once both swaps are under way, restarts it. */
  async function crashDuring(interrupt: () => Promise<void>, release: () => Promise<void>) {
    node = await startNodeProcess(env);
    const payer = await openAccount(node.url, await token(5));
    const refunder = await openAccount(node.url, await token(30));
    const t = await token(21);
    const seen = gateway.swapsSeen();
    await interrupt();
    const pendingTopup = topup(node.url, payer, t).catch(() => null);
    const pendingRefund = refund(node.url, refunder).catch(() => null);
    await waitFor('both swaps to leave the node', async () => gateway.swapsSeen() >= seen + 2);
    await node.crash();
    expect(await pendingTopup).toBeNull();
    expect(await pendingRefund).toBeNull();
    await release();
    node = await startNodeProcess(env);
    return { payer, refunder, t };
  }

  async function expectSettled(payer: string, refunder: string, t: string) {
    const url = node!.url;
    await waitFor('the top-up to be credited', async () => (await info(url, payer)).body.balance === 26_000, 20_000);
    const again = await topup(url, payer, t);
    expect(again.status).toBe(400);
    const refunded = await waitFor('the refund token', async () => {
      const answer = await refund(url, refunder);
      return answer.status === 200 ? answer : null;
    }, 20_000);
    expect(refunded.body).toMatchObject({ msats: 30_000, repeated: true, balance: 0 });
    expect(await receiveAtMint(gateway.url, refunded.body.token)).toBe(30);
    expect((await info(url, payer)).body.balance).toBe(26_000);
    expect((await info(url, refunder)).body.balance).toBe(0);
    await node!.stop();
    node = undefined;
    // No satoshi lost or created: the proofs the node holds are exactly what the accounts own,
    // and no operation is left unfinished.
    const db = await openDatabase(parseDatabaseUrl(database.url));
    try {
      const proofs = await db.kysely.selectFrom('proxy_proofs').select((eb) => eb.fn.sum<number>('amount').as('sats')).where('state', '=', 'unspent').executeTakeFirstOrThrow();
      const owed = await db.kysely.selectFrom('proxy_accounts').select((eb) => eb.fn.sum<number>('balance_msat').as('msat')).executeTakeFirstOrThrow();
      expect(Number(proofs.sats) * 1000).toBe(Number(owed.msat));
      const open = await db.kysely.selectFrom('proxy_mint_ops').select('id').where('state', 'in', ['preparing', 'pending']).execute();
      expect(open).toEqual([]);
    } finally {
      await db.close();
    }
  }

  it('killed after the mint did the swaps: credited once, refund token recovered', async () => {
    const { payer, refunder, t } = await crashDuring(
      () => mint.faults.set({ delayMs: 600 }),
      async () => {
        await waitFor('the mint to finish both swaps', async () => gateway.swapsDone() >= 2 && true);
        await mint.faults.set({ delayMs: 0 });
      },
    );
    await expectSettled(payer, refunder, t);
  }, 60_000);

  it('killed before the swaps reached the mint: sent again, credited once, refund token made', async () => {
    let done = 0;
    const { payer, refunder, t } = await crashDuring(
      async () => {
        done = gateway.swapsDone();
        gateway.faults.holdSwaps = true;
      },
      async () => {
        gateway.faults.holdSwaps = false;
        gateway.releaseHeld(false); // the held requests die unsent
        expect(gateway.swapsDone()).toBe(done);
      },
    );
    await expectSettled(payer, refunder, t);
  }, 60_000);
});

describe.each(databaseKinds)('a refund interrupted right after its debit on %s', (kind) => {
  it('is ended by the recovery and the debit given back', async () => {
    const mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    const server = await startTestServer(kind, { env: { SERVICES: 'proxy', PROXY_MINTS: mint.url, PROXY_RECOVERY_INTERVAL_MS: '200' } });
    try {
      const key = await openAccount(server.url, await mint.mintToken(10));
      const db = server.db.kysely;
      const account = await db.selectFrom('proxy_accounts').selectAll().where('key_prefix', '=', key.slice(0, 12)).executeTakeFirstOrThrow();
      // The state a crash leaves between step 1 (debit + journal entry) and step 2 (proofs chosen):
      // exactly what NodeWallet.refund writes in its first transaction, with the lease run out.
      await db.transaction().execute(async (trx) => {
        await trx.updateTable('proxy_accounts').set({ balance_msat: 0 }).where('id', '=', account.id).execute();
        await trx
          .insertInto('proxy_mint_ops')
          .values({
            kind: 'issue', purpose: 'refund', state: 'preparing', mint_url: mint.url, unit: 'sat', token_hash: null, request: null,
            credit_account_id: null, credit_key_hash: null, credit_key_prefix: null, debit_account_id: account.id, debit_msat: 10_000,
            result: null, error: null, lease_until: 0, created_at: Date.now(), updated_at: Date.now(),
          })
          .execute();
      });
      await waitFor('the debit to come back', async () => (await info(server.url, key)).body.balance === 10_000);
      const op = await db.selectFrom('proxy_mint_ops').select(['state', 'error']).where('debit_account_id', '=', account.id).executeTakeFirstOrThrow();
      expect(op).toEqual({ state: 'failed', error: 'interrupted before it was sent' });
      const paid = await refund(server.url, key);
      expect(paid.status).toBe(200);
      expect(await receiveAtMint(mint.url, paid.body.token)).toBe(10);
    } finally {
      await server.close();
      await mint.close();
    }
  });
});
