// Lightning out: refunds to a Lightning address (LNURL-pay, resolved at a loopback LNURL server of
// the test's own) paid by melting at the dev mint; a failed melt gives the balance back, a pending
// one holds it until the recovery learns the outcome; the operator's withdrawal by Lightning.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { databaseKinds } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { startLnurlServer, type LnurlServer } from './lnurl-server.js';
import { bearer, call, info, openAccount, waitFor } from './wallet-helpers.js';

const json = { 'content-type': 'application/json' };

const refundTo = (base: string, key: string, body?: unknown) =>
  call(base, 'POST', '/v1/balance/refund', { ...bearer(key), ...json }, body === undefined ? '' : JSON.stringify(body));

async function nodeProofs(server: TestServer) {
  const rows = await server.db.kysely.selectFrom('proxy_proofs').select(['amount', 'state']).execute();
  const sum = (state: string) => rows.filter((r) => r.state === state).reduce((s, r) => s + Number(r.amount), 0);
  return { unspent: sum('unspent'), reserved: sum('reserved') };
}

describe.each(databaseKinds)('refunds to a Lightning address on %s', (kind) => {
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
        PROXY_MINT_TIMEOUT_MS: '1000',
        PROXY_LNURL_ALLOW_HTTP_LOOPBACK: 'true',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await lnurl?.close();
    await mint?.close();
  });

  it('pays the balance less the fee reserve to the address, every sat accounted for', async () => {
    const key = await openAccount(server.url, await mint.mintToken(1000));
    const before = await nodeProofs(server);
    const paid = await refundTo(server.url, key, { lightning_address: lnurl.address.toUpperCase() });
    expect(paid.status).toBe(200);
    // The dev mint's reserve is 1 % (10 sat for 990): an invoice for 990 sat, the reserve unused.
    expect(paid.body).toMatchObject({
      status: 'paid',
      recipient: lnurl.address,
      msats: 990_000,
      fee_reserve_msats: 10_000,
      fee_paid_msats: 0,
      balance: 10_000,
    });
    expect(typeof paid.body.refund_id).toBe('number');
    expect(lnurl.asked.at(-1)!.amountMsat).toBe(990_000);
    // The mint paid the invoice with 990 of the node's sats; the change came back to the node.
    const after = await nodeProofs(server);
    expect(before.unspent - after.unspent).toBe(990);
    expect(after.reserved).toBe(0);
    const payment = await server.db.kysely
      .selectFrom('proxy_lightning_payments')
      .selectAll()
      .where('id', '=', paid.body.refund_id)
      .executeTakeFirstOrThrow();
    expect(payment).toMatchObject({ status: 'paid', bolt11: lnurl.asked.at(-1)!.invoice });
    expect(payment.preimage).toMatch(/^[0-9a-f]{64}$/);
    expect((await info(server.url, key)).body.balance).toBe(10_000);
  });

  it('pays to the Refund-LNURL address given when the token was first used', async () => {
    const token = await mint.mintToken(200);
    const opened = await call(server.url, 'GET', '/v1/balance/info', {
      ...bearer(token),
      'refund-lnurl': lnurl.address,
    });
    expect(opened.status).toBe(200);
    const key = opened.body.api_key;
    // A later header does not move the refunds elsewhere.
    await call(server.url, 'GET', '/v1/balance/info', { ...bearer(token), 'refund-lnurl': 'mallory@127.0.0.1:1' });
    const paid = await refundTo(server.url, key);
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ status: 'paid', recipient: lnurl.address, msats: 198_000 });
  });

  it('gives the whole balance back when the melt fails', async () => {
    const key = await openAccount(server.url, await mint.mintToken(300));
    const before = await nodeProofs(server);
    mint.lightning.failNextMelt('no route to the recipient');
    const failed = await refundTo(server.url, key, { lightning_address: lnurl.address });
    expect(failed.status).toBe(502);
    expect(failed.body.error.code).toBe('lightning_payment_failed');
    expect(failed.body.error.message).toContain('no route to the recipient');
    expect((await info(server.url, key)).body.balance).toBe(300_000);
    expect(await nodeProofs(server)).toEqual(before);
    const payment = await server.db.kysely
      .selectFrom('proxy_lightning_payments')
      .select('status')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(payment.status).toBe('failed');
  });

  for (const outcome of ['paid', 'failed'] as const) {
    it(`holds the balance while the melt is pending, then settles it (${outcome})`, async () => {
      const key = await openAccount(server.url, await mint.mintToken(400));
      const held = mint.lightning.holdNextMelt();
      // The node's melt request times out (PROXY_MINT_TIMEOUT_MS): its outcome is unknown.
      const pending = await refundTo(server.url, key, { lightning_address: lnurl.address });
      expect(pending.status).toBe(200);
      expect(pending.body).toMatchObject({ status: 'pending', msats: 396_000, balance: 0 });
      expect((await info(server.url, key)).body.balance).toBe(0);
      held.settle(outcome);
      const expected = outcome === 'paid' ? 4_000 : 400_000;
      await waitFor('the recovery to settle the melt', async () => {
        return (await info(server.url, key)).body.balance === expected;
      });
      const payment = await server.db.kysely
        .selectFrom('proxy_lightning_payments')
        .select('status')
        .where('id', '=', pending.body.refund_id)
        .executeTakeFirstOrThrow();
      expect(payment.status).toBe(outcome);
      expect((await nodeProofs(server)).reserved).toBe(0);
    });
  }

  it('refuses bad addresses with a clear error and takes nothing', async () => {
    const key = await openAccount(server.url, await mint.mintToken(50));
    const malformed = await refundTo(server.url, key, { lightning_address: 'not an address' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_lightning_address');
    const port = lnurl.address.split(':')[1];
    const nobody = await refundTo(server.url, key, { lightning_address: `bob@127.0.0.1:${port}` });
    expect(nobody.status).toBe(502);
    expect(nobody.body.error.message).toContain('no such user');
    const header = await call(server.url, 'GET', '/v1/balance/info', { ...bearer(key), 'refund-lnurl': 'x' });
    expect(header.status).toBe(400);
    expect((await info(server.url, key)).body.balance).toBe(50_000);
  });
});

describe.each(databaseKinds)("the operator's withdrawal by Lightning on %s", (kind) => {
  it('pays the earnings to an address and to a bolt11 invoice, counted once each', async () => {
    const mint = await startDevMint({ unit: 'sat', port: 0 });
    const lnurl = await startLnurlServer(mint);
    const server = await startTestServer(kind, {
      env: {
        SERVICES: 'proxy',
        PROXY_MINTS: mint.url,
        PROXY_ADMIN_PASSWORD: 'correct horse battery staple',
        PROXY_LNURL_ALLOW_HTTP_LOOPBACK: 'true',
      },
    });
    try {
      const key = await openAccount(server.url, await mint.mintToken(1000));
      // 600 sats of the account were charged for requests, as billing leaves it: the node's earnings.
      await server.db.kysely
        .updateTable('proxy_accounts')
        .set({ balance_msat: 400_000, total_spent_msat: 600_000 })
        .where('key_prefix', '=', key.slice(0, 12))
        .execute();
      const form = { 'content-type': 'application/x-www-form-urlencoded' };
      const login = await fetch(`${server.url}/admin/login`, {
        method: 'POST',
        headers: form,
        body: 'password=correct+horse+battery+staple',
        redirect: 'manual',
      });
      const cookie = login.headers.get('set-cookie')!.split(';')[0];
      const page = await (await fetch(`${server.url}/admin/`, { headers: { cookie } })).text();
      expect(page).toContain('withdraw-lightning-form');
      const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1];
      const withdraw = (fields: string) =>
        fetch(`${server.url}/admin/withdraw-lightning`, {
          method: 'POST',
          headers: { ...form, cookie },
          body: `csrf=${encodeURIComponent(csrf)}&${fields}`,
        });

      const toAddress = await withdraw(`target=${encodeURIComponent(lnurl.address)}&amount_sat=200`);
      expect(toAddress.status).toBe(200);
      expect(await toAddress.text()).toContain('data-status="paid"');
      expect(lnurl.asked.at(-1)!.amountMsat).toBe(200_000);

      const invoice = mint.lightning.createInvoice(100);
      const toInvoice = await withdraw(`target=${encodeURIComponent(invoice)}`);
      expect(toInvoice.status).toBe(200);

      // Each withdrawal counts what left the earnings: the invoice (the fake network charges no fee).
      const rows = await server.db.kysely
        .selectFrom('proxy_withdrawals')
        .select(['amount_msat', 'status'])
        .orderBy('id')
        .execute();
      expect(rows).toEqual([
        { amount_msat: 200_000, status: 'issued' },
        { amount_msat: 100_000, status: 'issued' },
      ]);
      const held = await nodeProofs(server);
      expect(held.unspent).toBe(700);

      // More than the earnings left (300 sat, less the fee reserve): refused, nothing recorded.
      const tooMuch = await withdraw(`target=${encodeURIComponent(lnurl.address)}&amount_sat=300`);
      expect(tooMuch.status).toBe(400);
      expect(await tooMuch.text()).toContain('earnings are 300000 msat');
      expect(await server.db.kysely.selectFrom('proxy_withdrawals').select('id').execute()).toHaveLength(2);
      expect((await info(server.url, key)).body.balance).toBe(400_000);
    } finally {
      await server.close();
      await lnurl.close();
      await mint.close();
    }
  });
});

/** bech32 (BIP-173) of a URL with prefix `lnurl`, as LUD-01 writes LNURLs. */
function encodeLnurl(url: string): string {
  const alphabet = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
  const words: number[] = [];
  let value = 0;
  let bits = 0;
  for (const byte of Buffer.from(url, 'utf8')) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      words.push((value >>> (bits - 5)) & 31);
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  if (bits > 0) words.push((value << (5 - bits)) & 31);
  const generator = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
  const polymod = (values: number[]) => {
    let chk = 1;
    for (const v of values) {
      const top = chk >>> 25;
      chk = ((chk & 0x1ffffff) << 5) ^ v;
      for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= generator[i];
    }
    return chk;
  };
  const hrp = [...'lnurl'].map((c) => c.charCodeAt(0));
  const mod = polymod([...hrp.map((c) => c >> 5), 0, ...hrp.map((c) => c & 31), ...words, 0, 0, 0, 0, 0, 0]) ^ 1;
  const checksum = Array.from({ length: 6 }, (_, i) => (mod >>> (5 * (5 - i))) & 31);
  return 'lnurl1' + [...words, ...checksum].map((w) => alphabet[w]).join('');
}

describe.each(databaseKinds)('refunds to a bech32 LNURL on %s', (kind) => {
  it('decodes it (checksum checked) and pays it', async () => {
    const { parseLightningAddress } = await import('../../src/proxy/lightning/lnurl.js');
    // LUD-01's own example.
    const example =
      'LNURL1DP68GURN8GHJ7UM9WFMXJCM99E3K7MF0V9CXJ0M385EKVCENXC6R2C35XVUKXEFCV5MKVV34X5EKZD3EV56NYD3HXQURZEPEXEJ' +
      'XXEPNXSCRVWFNV9NXZCN9XQ6XYEFHVGCXXCMYXYMNSERXFQ5FNS';
    expect(parseLightningAddress(example)).toBe(example.toLowerCase());
    expect(() => parseLightningAddress(example.slice(0, -1) + 'Q')).toThrow(/LNURL/);

    const mint = await startDevMint({ unit: 'sat', port: 0 });
    const lnurl = await startLnurlServer(mint);
    const server = await startTestServer(kind, {
      env: { SERVICES: 'proxy', PROXY_MINTS: mint.url, PROXY_LNURL_ALLOW_HTTP_LOOPBACK: 'true' },
    });
    try {
      const port = lnurl.address.split(':')[1];
      const encoded = encodeLnurl(`http://127.0.0.1:${port}/.well-known/lnurlp/alice`).toUpperCase();
      const key = await openAccount(server.url, await mint.mintToken(100));
      const paid = await refundTo(server.url, key, { lightning_address: encoded });
      expect(paid.status).toBe(200);
      expect(paid.body).toMatchObject({ status: 'paid', recipient: encoded.toLowerCase(), msats: 99_000 });
    } finally {
      await server.close();
      await lnurl.close();
      await mint.close();
    }
  });
});

describe.each(databaseKinds)('a Lightning refund while a token refund holds proofs in flight, on %s', (kind) => {
  it("waits for that refund's change to come back, then pays, not a 503", async () => {
    const mint = await startDevMint({ unit: 'sat', port: 0 });
    const lnurl = await startLnurlServer(mint);
    const server = await startTestServer(kind, {
      env: { SERVICES: 'proxy', PROXY_MINTS: mint.url, PROXY_LNURL_ALLOW_HTTP_LOOPBACK: 'true' },
    });
    try {
      // The node holds 16 + 4 sat from each; the token refund spends both 16s (change 12 to come back).
      const first = await openAccount(server.url, await mint.mintToken(20));
      const second = await openAccount(server.url, await mint.mintToken(20));
      await mint.faults.set({ holdSwaps: true });
      const tokenRefund = refundTo(server.url, first);
      await waitFor('the token refund swap to reach the mint', async () => mint.faults.heldSwaps === 1);
      // 8 sat unspent now: too little for the second's refund until the change is back.
      const lightningRefund = refundTo(server.url, second, { lightning_address: lnurl.address });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await mint.faults.set({ holdSwaps: false });
      const [token, paid] = await Promise.all([tokenRefund, lightningRefund]);
      expect(token.status, token.text).toBe(200);
      expect(token.body).toMatchObject({ msats: 20_000, balance: 0 });
      expect(paid.status, paid.text).toBe(200);
      expect(paid.body).toMatchObject({ status: 'paid', recipient: lnurl.address });
      expect(paid.body.msats + paid.body.fee_paid_msats + paid.body.balance).toBe(20_000);
      expect((await nodeProofs(server)).reserved).toBe(0);
    } finally {
      await server.close();
      await lnurl.close();
      await mint.close();
    }
  });
});

describe('Lightning addresses outside loopback tests', () => {
  it('are resolved over https only', async () => {
    const { Lnurl } = await import('../../src/proxy/lightning/lnurl.js');
    const strict = new Lnurl({ timeoutMs: 500, allowHttpLoopback: false });
    // https to a loopback port where nothing listens: refused as unreachable, never tried over http.
    await expect(strict.resolve('alice@127.0.0.1:1')).rejects.toMatchObject({
      status: 502,
      options: { code: 'lnurl_unreachable' },
    });
  });
});
