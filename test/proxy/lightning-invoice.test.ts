// Lightning in (RIP-08): invoices that are mint quotes of the node's mint, credited once when
// paid, also under concurrent polls and two processes; expiry leaves nothing; a crash between
// "paid" and "credited" is finished by the recovery. Against the dev mint's fake Lightning.
import { OutputData } from '@cashu/cashu-ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { databaseKinds } from '../support/databases.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { bearer, call, info, openAccount, receiveAtMint, refund, waitFor } from './wallet-helpers.js';

const json = { 'content-type': 'application/json' };

async function createInvoice(base: string, body: unknown, headers: Record<string, string> = {}) {
  return call(base, 'POST', '/v1/balance/lightning/invoice', { ...json, ...headers }, JSON.stringify(body));
}
const status = (base: string, id: string, prefix = '/v1/balance') =>
  call(base, 'GET', `${prefix}/lightning/invoice/${encodeURIComponent(id)}/status`);

async function quoteOf(server: TestServer, invoiceId: string): Promise<string> {
  const row = await server.db.kysely
    .selectFrom('proxy_lightning_invoices')
    .select('quote_id')
    .where('id', '=', invoiceId)
    .executeTakeFirstOrThrow();
  return row.quote_id;
}

/** What the node holds at the mint: its unspent proofs. */
async function heldSats(server: TestServer): Promise<number> {
  const rows = await server.db.kysely
    .selectFrom('proxy_proofs')
    .select('amount')
    .where('state', '=', 'unspent')
    .execute();
  return rows.reduce((sum, r) => sum + Number(r.amount), 0);
}

describe.each(databaseKinds)('Lightning invoices on %s', (kind) => {
  let mint: DevMint;
  let server: TestServer;

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', port: 0 });
    server = await startTestServer(kind, {
      env: { SERVICES: 'proxy', PROXY_MINTS: mint.url, PROXY_RECOVERY_INTERVAL_MS: '200' },
    });
  });
  afterAll(async () => {
    await server?.close();
    await mint?.close();
  });

  it('creates an account once the mint says paid, and its sats are real at the mint', async () => {
    const created = await createInvoice(server.url, { amount_sats: 500, purpose: 'create' });
    expect(created.status).toBe(200);
    const { invoice_id: id, bolt11, amount_sats, expires_at, payment_hash } = created.body;
    expect(amount_sats).toBe(500);
    expect(bolt11).toMatch(/^lnbcrt5u1/); // 500 sat = 5 micro-BTC, as BOLT-11 writes it
    expect(payment_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(expires_at).toBeGreaterThan(Date.now() / 1000);

    const unpaid = await status(server.url, id);
    expect(unpaid.status).toBe(200);
    expect(unpaid.body.status).toBe('pending');
    expect(unpaid.body).not.toHaveProperty('api_key');

    mint.lightning.payInvoice(await quoteOf(server, id));
    const paid = await status(server.url, id);
    expect(paid.body).toMatchObject({ status: 'paid', amount_sats: 500 });
    const key = paid.body.api_key;
    expect(key).toMatch(/^sk-[0-9a-f]{64}$/);
    expect((await info(server.url, key)).body.balance).toBe(500_000);
    // Asked again (an answer lost): the same key, nothing credited twice; Routstr's short prefix too.
    const again = await status(server.url, id, '');
    expect(again.body).toMatchObject({ status: 'paid', api_key: key });
    expect((await info(server.url, key)).body.balance).toBe(500_000);

    // The node really holds the sats: refunded as a token, the mint accepts all 500.
    const token = await refund(server.url, key);
    expect(token.status).toBe(200);
    expect(await receiveAtMint(mint.url, token.body.token)).toBe(500);
  });

  it('credits once when many requests poll the paid invoice at once', async () => {
    const { body } = await createInvoice(server.url, { amount_sats: 64 });
    mint.lightning.payInvoice(await quoteOf(server, body.invoice_id));
    const before = await heldSats(server);
    const answers = await Promise.all([
      ...Array.from({ length: 6 }, () => status(server.url, body.invoice_id)),
      call(server.url, 'POST', '/lightning/recover', json, JSON.stringify({ bolt11: body.bolt11 })),
    ]);
    const settled = answers.filter((a) => a.body.status === 'paid');
    // Requests that lost the race to start the mint answer pending while the winner mints.
    for (const answer of answers) expect(['paid', 'pending']).toContain(answer.body.status);
    expect(settled.length).toBeGreaterThan(0);
    const final = await status(server.url, body.invoice_id);
    expect(final.body.status).toBe('paid');
    const key = final.body.api_key;
    for (const answer of settled) expect(answer.body.api_key).toBe(key);
    expect((await info(server.url, key)).body.balance).toBe(64_000);
    expect((await heldSats(server)) - before).toBe(64);
    const ops = await server.db.kysely
      .selectFrom('proxy_mint_ops')
      .select(['state', 'credit_msat'])
      .where('kind', '=', 'mint')
      .where('credit_key_hash', 'is not', null)
      .where('credit_msat', '=', 64_000)
      .execute();
    expect(ops).toEqual([{ state: 'done', credit_msat: 64_000 }]);
  });

  it('tops up the account of the Authorization key, and refuses a top-up without one', async () => {
    const key = await openAccount(server.url, await mint.mintToken(100));
    const missing = await createInvoice(server.url, { amount_sats: 50, purpose: 'topup' });
    expect(missing.status).toBe(422);
    const unknown = await createInvoice(server.url, { amount_sats: 50, purpose: 'topup' }, bearer('sk-nope'));
    expect(unknown.status).toBe(401);

    const { body } = await createInvoice(server.url, { amount_sats: 50, purpose: 'topup' }, bearer(key));
    mint.lightning.payInvoice(await quoteOf(server, body.invoice_id));
    const paid = await status(server.url, body.invoice_id);
    expect(paid.body.status).toBe('paid');
    expect(paid.body).not.toHaveProperty('api_key'); // the caller has its key
    expect((await info(server.url, key)).body.balance).toBe(150_000);
  });

  it('expires an unpaid invoice and leaves nothing behind', async () => {
    const accounts = async () => (await server.db.kysely.selectFrom('proxy_accounts').select('id').execute()).length;
    const before = await accounts();
    const { body } = await createInvoice(server.url, { amount_sats: 21 });
    await server.db.kysely
      .updateTable('proxy_lightning_invoices')
      .set({ expires_at: Math.floor(Date.now() / 1000) - 1 })
      .where('id', '=', body.invoice_id)
      .execute();
    const expired = await status(server.url, body.invoice_id);
    expect(expired.body).toMatchObject({ status: 'expired', paid_at: null });
    expect(await accounts()).toBe(before);
    const op = await server.db.kysely
      .selectFrom('proxy_lightning_invoices')
      .select('op_id')
      .where('id', '=', body.invoice_id)
      .executeTakeFirstOrThrow();
    expect(op.op_id).toBeNull();
    // Paid after it expired at the node: still nothing credited.
    mint.lightning.payInvoice(await quoteOf(server, body.invoice_id));
    expect((await status(server.url, body.invoice_id)).body.status).toBe('expired');
    expect(await accounts()).toBe(before);
  });

  it('answers clear errors for bad inputs and unknown invoices', async () => {
    expect((await createInvoice(server.url, { amount_sats: 0 })).status).toBe(422);
    expect((await createInvoice(server.url, { purpose: 'create' })).status).toBe(422);
    expect((await createInvoice(server.url, { amount_sats: 5, purpose: 'steal' })).status).toBe(422);
    const tooLarge = await createInvoice(server.url, { amount_sats: 1_000_001 });
    expect(tooLarge.status).toBe(400);
    expect(tooLarge.body.error.code).toBe('amount_too_large');
    const unknown = await status(server.url, 'no-such-invoice');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('invoice_not_found');
    const lost = await call(server.url, 'POST', '/v1/balance/lightning/recover', json, '{"bolt11":"lnbc1nothing"}');
    expect(lost.status).toBe(404);
  });
});

describe.each(databaseKinds)('a Lightning mint interrupted by a crash on %s', (kind) => {
  let mint: DevMint;
  let server: TestServer;

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', port: 0 });
    server = await startTestServer(kind, {
      env: { SERVICES: 'proxy', PROXY_MINTS: mint.url, PROXY_RECOVERY_INTERVAL_MS: '200' },
    });
  });
  afterAll(async () => {
    await server?.close();
    await mint?.close();
  });

  /**
   * The state a crash leaves once the node saw the quote PAID: the mint journaled and tied to the
   * invoice (as LightningInvoices.startMint writes it), its lease run out. `reachedMint`: the mint
   * request had arrived and was performed before the node died (the node never heard back).
   */
  async function crashAfterPaid(reachedMint: boolean) {
    const created = await call(
      server.url,
      'POST',
      '/lightning/invoice',
      json,
      JSON.stringify({ amount_sats: 300, purpose: 'create' }),
    );
    const id = created.body.invoice_id;
    const quote = await quoteOf(server, id);
    mint.lightning.payInvoice(quote);
    const keysets = (await (await fetch(`${mint.url}/v1/keys`)).json()) as {
      keysets: { id: string; keys: Record<string, string> }[];
    };
    const outputs = OutputData.createRandomData(300, keysets.keysets[0]);
    const db = server.db.kysely;
    const now = Date.now();
    // The new account's key is derived from the invoice id (src/proxy/lightning/lightning.ts).
    const { apiKeyForInvoice } = await import('../../src/proxy/lightning/lightning.js');
    const { keyHash, keyPrefix } = await import('../../src/proxy/keys/accounts.js');
    const key = apiKeyForInvoice(id);
    await db.transaction().execute(async (trx) => {
      const op = await trx
        .insertInto('proxy_mint_ops')
        .values({
          kind: 'mint',
          purpose: 'lightning-create',
          state: 'pending',
          mint_url: mint.url,
          unit: 'sat',
          token_hash: null,
          request: JSON.stringify({
            quote,
            invoiceId: id,
            outputs: outputs.map((o) => OutputData.serialize(o)),
            keysetId: keysets.keysets[0].id,
          }),
          credit_account_id: null,
          credit_key_hash: keyHash(key),
          credit_key_prefix: keyPrefix(key),
          credit_msat: 300_000,
          debit_account_id: null,
          result: null,
          error: null,
          lease_until: 0,
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      await trx.updateTable('proxy_lightning_invoices').set({ op_id: op.id }).where('id', '=', id).execute();
    });
    if (reachedMint) {
      const blinded = outputs.map((o) => ({
        amount: Number(o.blindedMessage.amount.toString()),
        id: o.blindedMessage.id,
        B_: o.blindedMessage.B_,
      }));
      const minted = await fetch(`${mint.url}/v1/mint/bolt11`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ quote, outputs: blinded }),
      });
      expect(minted.status).toBe(200);
    }
    return { id, key };
  }

  for (const reachedMint of [true, false]) {
    it(`is credited once by the recovery (${reachedMint ? 'the mint had issued' : 'never sent'})`, async () => {
      const { id, key } = await crashAfterPaid(reachedMint);
      // No poll: the periodic recovery alone finishes it.
      await waitFor('the recovery to credit', async () => {
        const row = await server.db.kysely
          .selectFrom('proxy_lightning_invoices')
          .select('status')
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        return row.status === 'paid';
      });
      expect((await info(server.url, key)).body.balance).toBe(300_000);
      const paid = await status(server.url, id);
      expect(paid.body).toMatchObject({ status: 'paid', api_key: key });
      expect((await info(server.url, key)).body.balance).toBe(300_000);
      const token = await refund(server.url, key);
      expect(await receiveAtMint(mint.url, token.body.token)).toBe(300);
    });
  }
});

describe.each(databaseKinds)('two processes polling one invoice on %s', (kind) => {
  it('credits once', async () => {
    const mint = await startDevMint({ unit: 'sat', port: 0 });
    const env = { SERVICES: 'proxy', PROXY_MINTS: mint.url, PROXY_RECOVERY_INTERVAL_MS: '60000' };
    const first = await startTestServer(kind, { env });
    const second = await startTestServer(kind, { env, database: first.database });
    try {
      const { body } = await createInvoice(first.url, { amount_sats: 77 });
      mint.lightning.payInvoice(await quoteOf(first, body.invoice_id));
      const answers = await Promise.all([first, second, first, second].map((s) => status(s.url, body.invoice_id)));
      for (const answer of answers) expect(['paid', 'pending']).toContain(answer.body.status);
      const final = await status(second.url, body.invoice_id);
      expect(final.body.status).toBe('paid');
      expect((await info(first.url, final.body.api_key)).body.balance).toBe(77_000);
      const done = await first.db.kysely.selectFrom('proxy_mint_ops').select('id').where('kind', '=', 'mint').execute();
      expect(done).toHaveLength(1);
    } finally {
      await second.close();
      await first.close();
      await mint.close();
    }
  });
});

describe('invoices per client address', () => {
  it('are limited like token redemptions (429 with Retry-After), each costing a quote at the mint', async () => {
    const mint = await startDevMint({ unit: 'sat', port: 0 });
    const env = { SERVICES: 'proxy', PROXY_MINTS: mint.url, PROXY_REDEEM_LIMIT_PER_MINUTE: '2' };
    const server = await startTestServer('sqlite', { env });
    try {
      for (let i = 0; i < 2; i++) expect((await createInvoice(server.url, { amount_sats: 10 })).status).toBe(200);
      const refused = await createInvoice(server.url, { amount_sats: 10 });
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('rate_limit_exceeded');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      const rows = await server.db.kysely.selectFrom('proxy_lightning_invoices').select('id').execute();
      expect(rows).toHaveLength(2);
    } finally {
      await server.close();
      await mint.close();
    }
  });
});
