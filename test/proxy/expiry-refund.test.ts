// Keys given with Key-Expiry-Time and a Refund-LNURL address: once expired, the expiry job pays
// their balance to the address through the refund route's own path (the dev mint's fake Lightning,
// an LNURL server of the tests' own), once even when two processes run it at the same moment; a
// failing LNURL server or mint leaves the balance whole and is retried after a backoff; a key
// without an address is left alone; a crash between the claim and the payment is given back.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invoicePaymentHash } from '../../src/cashu/bolt11.js';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { ExpiryRefunds } from '../../src/proxy/lightning/expiry-refunds.js';
import { buildLightning } from '../../src/proxy/lightning/lightning-service.js';
import { NodeWallet } from '../../src/proxy/wallet/wallet.js';
import { databaseKinds } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { startLnurlServer, type LnurlServer } from './lnurl-server.js';
import { expectMoneyBalanced } from './money.js';
import { bearer, call, info, receiveAtMint, refund, waitFor } from './wallet-helpers.js';
import { accountId, expireAccount } from './wallet-node.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** The jobs the tests build run every minute (the default); a failed account waits 1, 2, 4… minutes. */
const INTERVAL_MS = 60_000;

interface LogLine {
  level: string;
  fields: object;
  message: string;
}

/**
 * The job as a process of the node builds it (its own wallet and Lightning parts on the node's
 * database): two of them are two processes. Its log lines are kept for the test to read.
 */
function buildJob(server: TestServer, batch = 20) {
  const lines: LogLine[] = [];
  const keep = (level: string) => (fields: object, message: string) => {
    lines.push({ level, fields, message });
  };
  const log = { info: keep('info'), warn: keep('warn'), error: keep('error') };
  const config = server.config.proxy;
  const lightning = buildLightning(server.db, new NodeWallet(server.db, config, log), config, log);
  const job = new ExpiryRefunds(
    server.db,
    lightning.payments,
    { expiryRefundIntervalMs: INTERVAL_MS, expiryRefundBatch: batch },
    log,
  );
  return { job, lines };
}

describe.each(databaseKinds)('refunds of expired keys on %s', (kind) => {
  let mint: DevMint;
  let lnurl: LnurlServer;
  let server: TestServer;

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', port: 0 });
    lnurl = await startLnurlServer(mint);
    server = await startTestServer(kind, {
      env: {
        SERVICES: 'proxy',
        PROXY_MINTS: mint.url,
        PROXY_RECOVERY_INTERVAL_MS: '200',
        PROXY_LNURL_ALLOW_HTTP_LOOPBACK: 'true',
        // The node's own timer stays out of the way: the tests run the passes themselves.
        PROXY_EXPIRY_REFUND_INTERVAL_MS: String(DAY_MS),
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await lnurl?.close();
    await mint?.close();
  });

  /**
   * An account opened by a token with Key-Expiry-Time (an hour ahead) and, if given, Refund-LNURL.
   * 100 sats: the invoice is 99 (the dev mint's reserve is 1 %, at least 1 sat), and the unused
   * reserve that comes back (1 sat) is too little to pay again, so no later pass touches it.
   */
  async function openExpiring(address?: string, sats = 100) {
    const headers: Record<string, string> = {
      ...bearer(await mint.mintToken(sats)),
      'key-expiry-time': String(Math.floor(Date.now() / 1000) + 3600),
    };
    if (address) headers['refund-lnurl'] = address;
    const opened = await call(server.url, 'GET', '/v1/balance/info', headers);
    expect(opened.status).toBe(200);
    return opened.body.api_key as string;
  }

  const expire = (key: string) => expireAccount(server, key);

  const scheduled = async (key: string) =>
    server.db.kysely
      .selectFrom('proxy_expiry_refunds')
      .selectAll()
      .where('account_id', '=', await accountId(server, key))
      .executeTakeFirst();

  async function paymentsOf(key: string) {
    return server.db.kysely
      .selectFrom('proxy_lightning_payments')
      .selectAll()
      .where('account_id', '=', await accountId(server, key))
      .orderBy('id')
      .execute();
  }

  it('pays the balance of an expired key to its address, less the fee reserve, and lists it', async () => {
    const { job } = buildJob(server);
    const key = await openExpiring(lnurl.address);
    const asked = lnurl.asked.length;
    expect(await job.runOnce()).toEqual({ paid: 0, pending: 0, failed: 0 }); // not expired yet
    await expire(key);

    expect(await job.runOnce()).toEqual({ paid: 1, pending: 0, failed: 0 });
    expect(lnurl.asked.slice(asked).map((a) => a.amountMsat)).toEqual([99_000]);
    const [payment] = await paymentsOf(key);
    expect(payment).toMatchObject({ status: 'paid', recipient: lnurl.address, amount_msat: 99_000 });
    // The mint paid the LNURL server's invoice: only its payee could give this preimage.
    expect(createHash('sha256').update(Buffer.from(payment.preimage!, 'hex')).digest('hex')).toBe(
      invoicePaymentHash(lnurl.asked.at(-1)!.invoice),
    );
    // What is left is the unused fee reserve: 1 sat, less than a payment can carry.
    expect((await info(server.url, key)).body).toMatchObject({ balance: 1_000, available: 1_000 });
    const history = await call(server.url, 'GET', '/v1/wallet/refunds', bearer(key));
    expect(history.status).toBe(200);
    expect(history.body.refunds).toEqual([
      expect.objectContaining({
        state: 'done',
        msats: 99_000,
        fee_msats: 0,
        token: null,
        lightning: { recipient: lnurl.address, amount_msats: 99_000 },
      }),
    ]);

    // Nothing more to pay: a later pass (a day on) asks for no invoice, and the account leaves the schedule.
    expect(await scheduled(key)).toMatchObject({ attempts: 0 });
    expect(await job.runOnce(Date.now() + DAY_MS)).toEqual({ paid: 0, pending: 0, failed: 0 });
    expect(lnurl.asked.length).toBe(asked + 1);
    expect(await scheduled(key)).toBeUndefined();
  });

  it('pays once when two processes run the job at the same moment, or the owner refunds meanwhile', async () => {
    const key = await openExpiring(lnurl.address);
    await expire(key);
    const asked = lnurl.asked.length;
    const reports = await Promise.all([buildJob(server).job.runOnce(), buildJob(server).job.runOnce()]);
    expect(reports.reduce((sum, r) => sum + r.paid, 0)).toBe(1);
    expect(lnurl.asked.length).toBe(asked + 1);
    expect((await paymentsOf(key)).map((p) => p.status)).toEqual(['paid']);
    expect((await info(server.url, key)).body.balance).toBe(1_000);

    // The route and the job at once: the balance is claimed by one of them, paid once.
    const raced = await openExpiring(lnurl.address);
    await expire(raced);
    const [, byOwner] = await Promise.all([
      buildJob(server).job.runOnce(),
      call(server.url, 'POST', '/v1/balance/refund', { ...bearer(raced), 'content-type': 'application/json' }, ''),
    ]);
    expect([200, 400]).toContain(byOwner.status);
    expect((await paymentsOf(raced)).map((p) => p.status)).toEqual(['paid']);
    expect((await info(server.url, raced)).body.balance).toBe(1_000);
  });

  it('keeps the balance whole while the LNURL server or the mint fails, retries after a backoff', async () => {
    const { job, lines } = buildJob(server);
    const key = await openExpiring(lnurl.address);
    await expire(key);
    const id = await accountId(server, key);
    const start = Date.now();

    lnurl.down = true;
    expect(await job.runOnce(start)).toEqual({ paid: 0, pending: 0, failed: 1 });
    expect((await info(server.url, key)).body).toMatchObject({ balance: 100_000, available: 100_000 });
    const warning = lines.find((l) => l.level === 'warn')!;
    expect(warning.fields).toMatchObject({ accountId: id, attempt: 1 });
    expect(warning.fields).toHaveProperty('err', expect.stringContaining('could not be reached'));
    expect(JSON.stringify(lines)).not.toContain(key.slice(3, 20)); // no key in the logs

    // No hot loop: until the backoff (one interval) has passed, the account is not tried again.
    lnurl.down = false;
    const asked = lnurl.asked.length;
    expect(await job.runOnce(start + 1000)).toEqual({ paid: 0, pending: 0, failed: 0 });
    expect(lnurl.asked.length).toBe(asked);

    // The mint fails the payment: given back whole, and the next wait is twice as long.
    const second = start + INTERVAL_MS + 1000;
    mint.lightning.failNextMelt('no route to the recipient');
    expect(await job.runOnce(second)).toEqual({ paid: 0, pending: 0, failed: 1 });
    expect((await info(server.url, key)).body.balance).toBe(100_000);
    const row = (await scheduled(key))!;
    expect(row).toMatchObject({ attempts: 2, next_attempt_at: second + 2 * INTERVAL_MS });
    expect(row.last_error).toContain('no route to the recipient');
    expect(await job.runOnce(second + INTERVAL_MS)).toEqual({ paid: 0, pending: 0, failed: 0 });

    expect(await job.runOnce(second + 2 * INTERVAL_MS)).toEqual({ paid: 1, pending: 0, failed: 0 });
    expect((await paymentsOf(key)).map((p) => p.status)).toEqual(['failed', 'paid']);
    expect((await info(server.url, key)).body.balance).toBe(1_000);
  });

  it('schedules the key again when a payment left pending fails in the end, and pays it then', async () => {
    const { job } = buildJob(server);
    const key = await openExpiring(lnurl.address);
    await expire(key);
    // The melt stays in flight past the node's time limit for it: the payment is pending, the balance held.
    const held = mint.lightning.holdNextMelt();
    expect(await job.runOnce()).toEqual({ paid: 0, pending: 1, failed: 0 });
    expect((await info(server.url, key)).body.balance).toBe(0);
    // Nothing to pay meanwhile: the account leaves the schedule.
    expect(await job.runOnce(Date.now() + INTERVAL_MS)).toEqual({ paid: 0, pending: 0, failed: 0 });
    expect(await scheduled(key)).toBeUndefined();
    // The payment fails; the recovery gives the balance back, and the account is due again.
    held.settle('failed');
    await waitFor('the recovery to give the balance back', async () => {
      return (await info(server.url, key)).body.balance === 100_000;
    });
    expect(await scheduled(key)).toBeDefined();
    expect(await job.runOnce()).toEqual({ paid: 1, pending: 0, failed: 0 });
    expect((await paymentsOf(key)).map((p) => p.status)).toEqual(['failed', 'paid']);
    expect((await info(server.url, key)).body.balance).toBe(1_000);
  });

  it('leaves an expired key without an address alone: its owner refunds it', async () => {
    const { job } = buildJob(server);
    const key = await openExpiring();
    await expire(key);
    expect(await scheduled(key)).toBeUndefined();
    const asked = lnurl.asked.length;
    expect(await job.runOnce()).toEqual({ paid: 0, pending: 0, failed: 0 });
    expect(lnurl.asked.length).toBe(asked);
    expect((await info(server.url, key)).body.balance).toBe(100_000);
    const token = await refund(server.url, key);
    expect(token.status).toBe(200);
    expect(await receiveAtMint(mint.url, token.body.token)).toBe(100);
  });

  it('pays at most a batch per pass, and accounts without an address never take its places', async () => {
    const { job } = buildJob(server, 1);
    // Older expiries first: these three have none to pay to.
    for (let i = 0; i < 3; i++) await expire(await openExpiring(undefined, 10));
    const first = await openExpiring(lnurl.address);
    const second = await openExpiring(lnurl.address);
    await expire(first);
    await expire(second);
    expect(await job.runOnce()).toEqual({ paid: 1, pending: 0, failed: 0 });
    expect(await job.runOnce()).toEqual({ paid: 1, pending: 0, failed: 0 });
    expect((await info(server.url, first)).body.balance).toBe(1_000);
    expect((await info(server.url, second)).body.balance).toBe(1_000);
  });

  it('gives the claimed balance back when the node died between the claim and the payment', async () => {
    const key = await openExpiring(lnurl.address);
    const id = await accountId(server, key);
    // The state LightningPayments.refund leaves once it has claimed the balance (a preparing melt
    // holding the debit) and before the melt is journaled, with its lease run out.
    const now = Date.now();
    await server.db.kysely.updateTable('proxy_accounts').set({ balance_msat: 0 }).where('id', '=', id).execute();
    await server.db.kysely
      .insertInto('proxy_mint_ops')
      .values({
        kind: 'melt',
        purpose: 'refund',
        state: 'preparing',
        mint_url: mint.url,
        unit: 'sat',
        debit_account_id: id,
        debit_msat: 100_000,
        lease_until: 0,
        created_at: now,
        updated_at: now,
      })
      .execute();
    // The recovery (every 200 ms here, and at start) gives it back.
    await waitFor('the recovery to give the claim back', async () => {
      return (await info(server.url, key)).body.balance === 100_000;
    });
    const op = await server.db.kysely
      .selectFrom('proxy_mint_ops')
      .select(['state'])
      .where('debit_account_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(op.state).toBe('failed');
    expect(await paymentsOf(key)).toEqual([]);
  });

  it("balances the books with the mint's ledger after all of the above", async () => {
    await expectMoneyBalanced(server.db);
  });
});

describe.each(databaseKinds)("the node's own expiry job on %s", (kind) => {
  it('pays an expired key to its address on its timer', async () => {
    const mint = await startDevMint({ unit: 'sat', port: 0 });
    const lnurl = await startLnurlServer(mint);
    const server = await startTestServer(kind, {
      env: {
        SERVICES: 'proxy',
        PROXY_MINTS: mint.url,
        PROXY_LNURL_ALLOW_HTTP_LOOPBACK: 'true',
        PROXY_EXPIRY_REFUND_INTERVAL_MS: '200',
      },
    });
    try {
      const opened = await call(server.url, 'GET', '/v1/balance/info', {
        ...bearer(await mint.mintToken(100)),
        'key-expiry-time': String(Math.floor(Date.now() / 1000) + 2),
        'refund-lnurl': lnurl.address,
      });
      expect(opened.status).toBe(200);
      const key = opened.body.api_key;
      await waitFor('the job to pay the expired key', async () => {
        return (await info(server.url, key)).body.balance === 1_000;
      });
      expect(lnurl.asked.map((a) => a.amountMsat)).toEqual([99_000]);
    } finally {
      await server.close();
      await lnurl.close();
      await mint.close();
    }
  });
});
