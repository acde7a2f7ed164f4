// Crash tests: the node runs as a child process and is killed with SIGKILL in the middle of a
// top-up and of a refund, after the swaps reached the mint (the dev mint holds them until the
// node is dead, then does them: the node never hears back); recovery-resend.test.ts has the
// mint drop them instead. After a restart on the same database the start-up recovery must put
// the money where it belongs, exactly once.
import { describe, expect, it } from 'vitest';
import { startDevMint } from '../../src/devmint/index.js';
import { databaseKinds } from '../support/databases.js';
import { startTestServer } from '../support/server.js';
import { crashHarness } from './fixtures/wallet-crash.js';
import { info, openAccount, receiveAtMint, refund, waitFor } from './wallet-helpers.js';

describe.each(databaseKinds)('crash after the mint did the swaps, on %s', (kind) => {
  const h = crashHarness(kind);

  it('killed after the mint did the swaps: credited once, refund token recovered', async () => {
    // The mint holds both swaps until the node is dead, then performs them: the node never
    // hears back, and the restarted node must find them done (checkstate) and restore them (NUT-09).
    const { payer, refunder, t } = await h.crashDuring('perform');
    await h.expectSettled(payer, refunder, t);
  }, 240_000); // two node processes started one after the other, each up to 90 s on a busy machine
});

describe.each(databaseKinds)('a refund interrupted right after its debit on %s', (kind) => {
  it('is ended by the recovery and the debit given back', async () => {
    const mint = await startDevMint({ unit: 'sat', inputFeePpk: 0, port: 0 });
    const server = await startTestServer(kind, {
      env: { SERVICES: 'proxy', PROXY_MINTS: mint.url, PROXY_RECOVERY_INTERVAL_MS: '200' },
    });
    try {
      const key = await openAccount(server.url, await mint.mintToken(10));
      const db = server.db.kysely;
      const account = await db
        .selectFrom('proxy_accounts')
        .selectAll()
        .where('key_prefix', '=', key.slice(0, 12))
        .executeTakeFirstOrThrow();
      // The state a crash leaves between step 1 (debit + journal entry) and step 2 (proofs chosen):
      // exactly what NodeWallet.refund writes in its first transaction, with the lease run out.
      await db.transaction().execute(async (trx) => {
        await trx.updateTable('proxy_accounts').set({ balance_msat: 0 }).where('id', '=', account.id).execute();
        await trx
          .insertInto('proxy_mint_ops')
          .values({
            kind: 'issue',
            purpose: 'refund',
            state: 'preparing',
            mint_url: mint.url,
            unit: 'sat',
            token_hash: null,
            request: null,
            credit_account_id: null,
            credit_key_hash: null,
            credit_key_prefix: null,
            debit_account_id: account.id,
            debit_msat: 10_000,
            result: null,
            error: null,
            lease_until: 0,
            created_at: Date.now(),
            updated_at: Date.now(),
          })
          .execute();
      });
      await waitFor('the debit to come back', async () => (await info(server.url, key)).body.balance === 10_000);
      const op = await db
        .selectFrom('proxy_mint_ops')
        .select(['state', 'error'])
        .where('debit_account_id', '=', account.id)
        .executeTakeFirstOrThrow();
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
