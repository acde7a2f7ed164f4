// Issue 14's first proof, end to end: a caller funds an account by a Lightning invoice, chats, and
// takes the rest back to a Lightning address; the dev mint's own books (its mint quote, its melt
// quote, the state of every proof the node holds) confirm where every sat went:
// paid in = charged + paid out + Lightning fees + what stays in the balance.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { databaseKinds } from '../support/databases.js';
import { chatBody, postJson, startNode, testCost, type Node } from './forward-helpers.js';
import { startLnurlServer, type LnurlServer } from './lnurl-server.js';
import { expectMoneyBalanced } from './money.js';
import { bearer, call, info } from './wallet-helpers.js';

const json = { 'content-type': 'application/json' };

async function mintApi(mint: DevMint, method: string, path: string, body?: unknown) {
  const response = await fetch(`${mint.url}${path}`, {
    method,
    headers: json,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as any;
}

describe.each(databaseKinds)('fund by invoice, chat, refund to a Lightning address on %s', (kind) => {
  let mint: DevMint;
  let lnurl: LnurlServer;
  let node: Node;

  beforeAll(async () => {
    mint = await startDevMint({ unit: 'sat', port: 0 });
    lnurl = await startLnurlServer(mint);
    node = await startNode(kind, { env: { PROXY_MINTS: mint.url, PROXY_LNURL_ALLOW_HTTP_LOOPBACK: 'true' } });
  });
  afterAll(async () => {
    await node?.close();
    await lnurl?.close();
    await mint?.close();
  });

  it('accounts for every sat at the mint', async () => {
    const db = node.server.db.kysely;
    // 1. An invoice of 1000 sats, paid (by "someone" on the fake network): an account with its key.
    const created = await call(
      node.url,
      'POST',
      '/v1/balance/lightning/invoice',
      json,
      JSON.stringify({ amount_sats: 1000, purpose: 'create' }),
    );
    expect(created.status).toBe(200);
    const { quote_id: mintQuote } = await db
      .selectFrom('proxy_lightning_invoices')
      .select('quote_id')
      .where('id', '=', created.body.invoice_id)
      .executeTakeFirstOrThrow();
    mint.lightning.payInvoice(mintQuote);
    const paid = await call(node.url, 'GET', `/v1/balance/lightning/invoice/${created.body.invoice_id}/status`);
    expect(paid.body.status).toBe('paid');
    const key = paid.body.api_key;

    // 2. Two chats, billed from their usage.
    let charged = 0;
    for (let i = 0; i < 2; i++) {
      const chat = await postJson(`${node.url}/v1/chat/completions`, chatBody(), bearer(key));
      expect(chat.status).toBe(200);
      charged += testCost(chat.json.usage);
    }
    const afterChats = (await info(node.url, key)).body;
    expect(afterChats.total_spent).toBe(charged);
    expect(afterChats.balance).toBe(1_000_000 - charged);

    // 3. The rest to a Lightning address.
    const refund = await call(
      node.url,
      'POST',
      '/v1/balance/refund',
      { ...bearer(key), ...json },
      JSON.stringify({ lightning_address: lnurl.address }),
    );
    expect(refund.status).toBe(200);
    expect(refund.body.status).toBe('paid');
    const paidOut = refund.body.msats;
    expect(lnurl.asked.map((a) => a.amountMsat)).toEqual([paidOut]);
    const lightningFees = refund.body.fee_paid_msats;
    const left = (await info(node.url, key)).body.balance;

    // The mint's books. In: its quote of the invoice was paid and minted, 1000 sats.
    const mintQuoteState = await mintApi(mint, 'GET', `/v1/mint/quote/bolt11/${mintQuote}`);
    expect(mintQuoteState).toMatchObject({ state: 'ISSUED', amount: 1000 });
    // Out: the melt quote of the LNURL server's invoice is paid, for exactly what the node says it paid.
    const op = await db
      .selectFrom('proxy_lightning_payments')
      .innerJoin('proxy_mint_ops', 'proxy_mint_ops.id', 'proxy_lightning_payments.op_id')
      .select('proxy_mint_ops.request')
      .where('proxy_lightning_payments.id', '=', refund.body.refund_id)
      .executeTakeFirstOrThrow();
    const meltQuote = JSON.parse(op.request!).quote;
    const meltQuoteState = await mintApi(mint, 'GET', `/v1/melt/quote/bolt11/${meltQuote}`);
    expect(meltQuoteState).toMatchObject({ state: 'PAID', amount: paidOut / 1000 });
    expect(meltQuoteState.fee_reserve * 1000).toBeGreaterThanOrEqual(lightningFees);

    // Every sat: paid in = charged + paid out + Lightning fees + what stays in the balance.
    expect(1_000_000).toBe(charged + paidOut + lightningFees + left);
    // And what the node holds is real: every proof it keeps is unspent at the mint, and they are
    // worth exactly what it owes (the balance left) plus what it earned (the charges).
    const held = await db.selectFrom('proxy_proofs').select(['y', 'amount']).where('state', '=', 'unspent').execute();
    const states = await mintApi(mint, 'POST', '/v1/checkstate', { Ys: held.map((p) => p.y) });
    expect(states.states.map((s: { state: string }) => s.state)).toEqual(held.map(() => 'UNSPENT'));
    expect(held.reduce((sum, p) => sum + Number(p.amount), 0) * 1000).toBe(left + charged);
    expect(await db.selectFrom('proxy_proofs').select('id').where('state', '=', 'reserved').execute()).toEqual([]);
    // The node's whole book, the same way: taken = balances + earnings + paid back.
    await expectMoneyBalanced(node.server.db);
  });
});
