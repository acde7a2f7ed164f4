// The proxy node's money invariant, asserted at the end of fault scenarios: every token the node
// took is, to the msat, in an account's balance, in the node's earnings, or paid back as a token;
// and the books agree with the mints' own ledgers (NUT-07 checkstate): the tokens counted as taken
// are spent at their mint, and the proofs the node holds are unspent there.
import { expect } from 'vitest';
import type { Database } from '../../src/db/index.js';
import { nodeTotals } from '../../src/proxy/operator/earnings.js';
import { unitToMsat } from '../../src/cashu/index.js';

export interface MoneyBook {
  /** Credited by completed redemptions (each token's value minus the mint's input fee) and paid invoices. */
  takenMsat: number;
  /** Everything the accounts own (reserved parts included). */
  balancesMsat: number;
  /** The node's earnings still in its wallet (earned − withdrawn), from the admin totals. */
  earningsMsat: number;
  /** Debited for refund and withdrawal tokens and Lightning payments (the mint's fees on them included). */
  paidBackMsat: number;
  /** The proofs the node's books hold unspent. */
  heldMsat: number;
}

/** Reads the books, and fails the test where a mint's ledger disagrees with them. */
export async function moneyBook(db: Database): Promise<MoneyBook> {
  const k = db.kysely;
  const done = k.selectFrom('proxy_mint_ops').where('state', '=', 'done');
  const redeemed = await done.select(['mint_url', 'credit_msat', 'request']).where('kind', '=', 'redeem').execute();
  const refunds = await done.select('debit_msat').where('kind', '=', 'issue').where('purpose', '=', 'refund').execute();
  // Lightning in and out: invoices minted and credited, refunds melted (debited: what the payment cost).
  const minted = await done.select('credit_msat').where('kind', '=', 'mint').execute();
  const melted = await done.select('debit_msat').where('kind', '=', 'melt').where('purpose', '=', 'refund').execute();
  const held = k.selectFrom('proxy_proofs').where('state', '=', 'unspent');
  const proofs = await held.select(['mint_url', 'unit', 'amount', 'y']).execute();
  const accounts = await k.selectFrom('proxy_accounts').select('balance_msat').execute();
  const totals = await nodeTotals(db);

  // The mints' view: what the node took is spent there, what it holds is not.
  const taken = redeemed.map((op) => ({ mint_url: op.mint_url, ys: (JSON.parse(op.request!) as { ys: string[] }).ys }));
  for (const [mint, ys] of byMint(taken)) {
    expect(new Set(await mintStates(mint, ys)), `the redeemed tokens at ${mint}`).toEqual(new Set(['SPENT']));
  }
  for (const [mint, ys] of byMint(proofs.map((p) => ({ mint_url: p.mint_url, ys: [p.y] })))) {
    expect(new Set(await mintStates(mint, ys)), `the node's proofs at ${mint}`).toEqual(new Set(['UNSPENT']));
  }

  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  return {
    takenMsat: sum([...redeemed, ...minted].map((op) => Number(op.credit_msat))),
    balancesMsat: sum(accounts.map((a) => Number(a.balance_msat))),
    earningsMsat: totals.earningsMsat,
    paidBackMsat: sum([...refunds, ...melted].map((op) => Number(op.debit_msat))) + totals.withdrawnMsat,
    heldMsat: sum(proofs.map((p) => unitToMsat(Number(p.amount), p.unit))),
  };
}

/**
 * Asserts the invariant on a settled node (no mint operation unfinished, no proof reserved):
 * taken = balances + earnings + paid back, and the proofs held = balances + earnings.
 */
export async function expectMoneyBalanced(db: Database): Promise<MoneyBook> {
  const k = db.kysely;
  const unfinished = k.selectFrom('proxy_mint_ops').where('state', 'in', ['preparing', 'pending']);
  const open = await unfinished.select(['id', 'kind', 'purpose', 'state']).execute();
  expect(open, 'mint operations left unfinished').toEqual([]);
  const reserved = await k.selectFrom('proxy_proofs').select('id').where('state', '=', 'reserved').execute();
  expect(reserved, 'proofs left reserved').toEqual([]);
  const book = await moneyBook(db);
  const owed = book.balancesMsat + book.earningsMsat;
  expect(book.takenMsat, `taken vs where it went: ${JSON.stringify(book)}`).toBe(owed + book.paidBackMsat);
  expect(book.heldMsat, `proofs held vs owed: ${JSON.stringify(book)}`).toBe(owed);
  return book;
}

function byMint(items: { mint_url: string; ys: string[] }[]): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const item of items) map.set(item.mint_url, [...(map.get(item.mint_url) ?? []), ...item.ys]);
  return map;
}

/** NUT-07 states of these Ys at the mint, asked over HTTP in batches. */
async function mintStates(mintUrl: string, ys: string[]): Promise<string[]> {
  const states: string[] = [];
  for (let i = 0; i < ys.length; i += 1000) {
    const response = await fetch(`${mintUrl}/v1/checkstate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ Ys: ys.slice(i, i + 1000) }),
    });
    expect(response.status, `checkstate at ${mintUrl}`).toBe(200);
    states.push(...((await response.json()) as { states: { state: string }[] }).states.map((s) => s.state));
  }
  return states;
}
