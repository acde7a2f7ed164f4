// Conformance: @cashu/cashu-ts 4.x, a real Cashu wallet library, as the dev mint's client.
import {
  getDecodedToken,
  getEncodedToken,
  hasValidDleq,
  isMintOperationError,
  MintOperationError,
  type Proof,
} from '@cashu/cashu-ts';
import { describe, expect, test } from 'vitest';
import type { DevMint } from '../../src/devmint/index.js';
import { mintProofs, openMint, states, total, walletFor } from './helpers.js';

async function codeOf(promise: Promise<unknown>): Promise<number> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isMintOperationError(error)) throw new Error(`expected a mint error, got ${String(error)}`);
  return (error as MintOperationError).code;
}

describe('dev mint with cashu-ts, no fees', () => {
  let mint: DevMint;
  openMint((opened) => (mint = opened));

  test('mint: quote UNPAID → paid → proofs for the amount, quote ISSUED', async () => {
    const wallet = await walletFor(mint);
    const quote = await wallet.createMintQuoteBolt11(100);
    expect(quote.state).toBe('UNPAID');
    expect(quote.request).toMatch(/^lnbcrt1u1/); // 100 sat = 1 µBTC, in the invoice's amount
    await expect(codeOf(wallet.mintProofsBolt11(100, quote.quote))).resolves.toBe(20001);
    mint.lightning.payInvoice(quote.quote);
    expect((await wallet.checkMintQuoteBolt11(quote.quote)).state).toBe('PAID');
    const proofs = await wallet.mintProofsBolt11(100, quote.quote);
    expect(total(proofs)).toBe(100);
    expect((await wallet.checkMintQuoteBolt11(quote.quote)).state).toBe('ISSUED');
    await expect(codeOf(wallet.mintProofsBolt11(100, quote.quote))).resolves.toBe(20002);
  });

  test('every signature carries a DLEQ proof the wallet verifies (NUT-12)', async () => {
    const wallet = await walletFor(mint, { requireSigDleq: true });
    const proofs = await mintProofs(wallet, mint, 37);
    const keyset = wallet.getKeyset();
    for (const proof of proofs) expect(hasValidDleq(proof, keyset)).toBe(true);
    // A tampered proof must fail the same check, or the check above proves nothing.
    const tampered: Proof = { ...proofs[0], dleq: { ...proofs[0].dleq!, s: proofs[0].dleq!.e } };
    expect(hasValidDleq(tampered, keyset)).toBe(false);
    // And the DLEQ travels with a token: the receiver's wallet checks it too.
    const received = await (
      await walletFor(mint, { requireSigDleq: true })
    ).receive(getEncodedToken({ mint: mint.url, proofs, unit: 'sat' }));
    expect(total(received)).toBe(37);
  });

  test('send splits by a swap, receive swaps the token; the sent proofs are then SPENT', async () => {
    const alice = await walletFor(mint);
    const carol = await walletFor(mint);
    const proofs = await mintProofs(alice, mint, 64);
    const { send, keep } = await alice.send(21, proofs);
    expect(total(send)).toBe(21);
    expect(total(keep)).toBe(43);
    expect(await states(mint, proofs)).toEqual(proofs.map(() => 'SPENT'));
    expect(await states(mint, send)).toEqual(send.map(() => 'UNSPENT'));
    const token = getEncodedToken({ mint: mint.url, proofs: send, unit: 'sat' });
    const received = await carol.receive(token);
    expect(total(received)).toBe(21);
    expect(await states(mint, send)).toEqual(send.map(() => 'SPENT'));
    expect(await states(mint, received)).toEqual(received.map(() => 'UNSPENT'));
  });

  test('double spend refused: a token received twice → 11001', async () => {
    const token = await mint.mintToken(50);
    const wallet = await walletFor(mint);
    expect(total(await wallet.receive(token))).toBe(50);
    await expect(codeOf(wallet.receive(token))).resolves.toBe(11001);
  });

  test('the same proofs in parallel swaps: exactly one wins', async () => {
    const token = await mint.mintToken(128);
    const wallets = await Promise.all(Array.from({ length: 8 }, () => walletFor(mint)));
    const results = await Promise.allSettled(wallets.map((wallet) => wallet.receive(token)));
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    expect(total((won[0] as PromiseFulfilledResult<Proof[]>).value)).toBe(128);
    for (const lost of results.filter((r) => r.status === 'rejected')) {
      const error = (lost as PromiseRejectedResult).reason;
      expect(isMintOperationError(error) && [11001, 11002].includes(error.code)).toBe(true);
    }
  });

  test('NUT-09/13: a wallet restored from the same seed finds its proofs again', async () => {
    const seed = new Uint8Array(64).fill(7);
    const original = await walletFor(mint, { bip39seed: seed });
    const proofs = await mintProofs(original, mint, 45);
    const restored = await walletFor(mint, { bip39seed: seed });
    const { proofs: found } = await restored.batchRestore(10, 10); // a small gap limit keeps the client's work small
    expect(found.map((p) => p.secret).sort()).toEqual(proofs.map((p) => p.secret).sort());
    expect(total(found)).toBe(45);
  });

  test('mintToken returns a cashuB token of this mint and unit', async () => {
    const token = await mint.mintToken(10);
    expect(token.startsWith('cashuB')).toBe(true);
    const decoded = getDecodedToken(token, [mint.keysetId()]);
    expect(decoded.mint).toBe(mint.url);
    expect(decoded.unit).toBe('sat');
    expect(total(decoded.proofs)).toBe(10);
  });

  test('melt: pays the invoice, spends the inputs, returns the unused fee reserve as change (NUT-08)', async () => {
    const wallet = await walletFor(mint);
    const proofs = await mintProofs(wallet, mint, 200);
    const quote = await wallet.createMeltQuoteBolt11(mint.lightning.createInvoice(100));
    expect(quote.amount.toNumber()).toBe(100);
    expect(quote.fee_reserve.toNumber()).toBe(1);
    expect(quote.state).toBe('UNPAID');
    const { send, keep } = await wallet.send(101, proofs, { includeFees: true });
    const result = await wallet.meltProofsBolt11(quote, send);
    expect(result.quote.state).toBe('PAID');
    expect(result.quote.payment_preimage).toMatch(/^[0-9a-f]{64}$/);
    expect(total(result.change)).toBe(total(send) - 100); // the fake network charged no fee
    expect(await states(mint, send)).toEqual(send.map(() => 'SPENT'));
    expect(await states(mint, [...keep, ...result.change])).toEqual([...keep, ...result.change].map(() => 'UNSPENT'));
    expect((await wallet.checkMeltQuoteBolt11(quote.quote)).state).toBe('PAID');
    await expect(codeOf(wallet.meltProofsBolt11(quote, await mintProofs(wallet, mint, 101)))).resolves.toBe(20006);
  });

  test('melt failure: 20004, the inputs stay unspent and can pay the retry', async () => {
    const wallet = await walletFor(mint);
    const proofs = await mintProofs(wallet, mint, 16);
    const quote = await wallet.createMeltQuoteBolt11(mint.lightning.createInvoice(8));
    mint.lightning.failNextMelt('no route');
    await expect(codeOf(wallet.meltProofsBolt11(quote, proofs))).resolves.toBe(20004);
    expect(await states(mint, proofs)).toEqual(proofs.map(() => 'UNSPENT'));
    expect((await wallet.checkMeltQuoteBolt11(quote.quote)).state).toBe('UNPAID');
    const retry = await wallet.meltProofsBolt11(quote, proofs);
    expect(retry.quote.state).toBe('PAID');
    expect(total(retry.change)).toBe(16 - 8);
  });

  test('melt in flight: inputs and quote PENDING, the proofs refused elsewhere (11002), then SPENT', async () => {
    const wallet = await walletFor(mint);
    const proofs = await mintProofs(wallet, mint, 32);
    const quote = await wallet.createMeltQuoteBolt11(mint.lightning.createInvoice(20));
    const held = mint.lightning.holdNextMelt();
    const melting = wallet.meltProofsBolt11(quote, proofs);
    await expect.poll(() => states(mint, proofs)).toEqual(proofs.map(() => 'PENDING'));
    expect((await wallet.checkMeltQuoteBolt11(quote.quote)).state).toBe('PENDING');
    await expect(
      codeOf((await walletFor(mint)).receive(getEncodedToken({ mint: mint.url, proofs, unit: 'sat' }))),
    ).resolves.toBe(11002);
    held.settle('paid');
    expect((await melting).quote.state).toBe('PAID');
    expect(await states(mint, proofs)).toEqual(proofs.map(() => 'SPENT'));
  });

  test('a held melt that fails releases its inputs', async () => {
    const wallet = await walletFor(mint);
    const proofs = await mintProofs(wallet, mint, 8);
    const quote = await wallet.createMeltQuoteBolt11(mint.lightning.createInvoice(4));
    const held = mint.lightning.holdNextMelt();
    const melting = codeOf(wallet.meltProofsBolt11(quote, proofs));
    await expect.poll(() => states(mint, proofs)).toEqual(proofs.map(() => 'PENDING'));
    held.settle('failed');
    await expect(melting).resolves.toBe(20004);
    expect(await states(mint, proofs)).toEqual(proofs.map(() => 'UNSPENT'));
  });

  test('melt to an invoice of this mint settles internally: no fee reserve, the mint quote becomes PAID', async () => {
    const payer = await walletFor(mint);
    const payee = await walletFor(mint);
    const proofs = await mintProofs(payer, mint, 30);
    const mintQuote = await payee.createMintQuoteBolt11(25);
    const meltQuote = await payer.createMeltQuoteBolt11(mintQuote.request);
    expect(meltQuote.fee_reserve.toNumber()).toBe(0);
    const result = await payer.meltProofsBolt11(meltQuote, proofs);
    expect(total(result.change)).toBe(5);
    expect((await payee.checkMintQuoteBolt11(mintQuote.quote)).state).toBe('PAID');
    expect(total(await payee.mintProofsBolt11(25, mintQuote.quote))).toBe(25);
  });
});

describe('dev mint with cashu-ts, input fees (input_fee_ppk 250)', () => {
  let mint: DevMint;
  openMint((opened) => (mint = opened), { inputFeePpk: 250 });

  test('keysets announce the fee; swaps charge ceil(inputs × ppk / 1000)', async () => {
    const wallet = await walletFor(mint);
    expect(wallet.getKeyset().fee).toBe(250);
    const proofs = await mintProofs(wallet, mint, 15); // 8 + 4 + 2 + 1: four inputs, fee 1
    expect(proofs).toHaveLength(4);
    expect(wallet.getFeesForProofs(proofs).toNumber()).toBe(1);
    // Receiving all four: one swap of 4 inputs, 1 sat fee.
    const received = await (await walletFor(mint)).receive(getEncodedToken({ mint: mint.url, proofs, unit: 'sat' }));
    expect(total(received)).toBe(14);
    // Sending with includeFees: the receiver gets the amount after paying the input fee.
    const { send } = await wallet.send(10, received, { includeFees: true });
    const carol = await walletFor(mint);
    expect(total(await carol.receive(getEncodedToken({ mint: mint.url, proofs: send, unit: 'sat' })))).toBe(10);
  });

  test('melt charges the input fee on top of amount and fee reserve', async () => {
    const wallet = await walletFor(mint);
    const proofs = await mintProofs(wallet, mint, 64);
    const quote = await wallet.createMeltQuoteBolt11(mint.lightning.createInvoice(40));
    const { send } = await wallet.send(41, proofs, { includeFees: true });
    const fee = wallet.getFeesForProofs(send).toNumber();
    const result = await wallet.meltProofsBolt11(quote, send);
    expect(result.quote.state).toBe('PAID');
    expect(total(result.change)).toBe(total(send) - fee - 40);
  });
});

describe('dev mint with cashu-ts, unit msat', () => {
  let mint: DevMint;
  openMint((opened) => (mint = opened), { unit: 'msat' });

  test('mint, send, receive and melt in msat', async () => {
    const wallet = await walletFor(mint);
    expect(wallet.getKeyset().unit).toBe('msat');
    const proofs = await mintProofs(wallet, mint, 5500);
    expect(total(proofs)).toBe(5500);
    const token = getEncodedToken({ mint: mint.url, proofs, unit: 'msat' });
    const received = await (await walletFor(mint)).receive(token);
    expect(total(received)).toBe(5500);
    const quote = await wallet.createMeltQuoteBolt11(mint.lightning.createInvoice(2500));
    expect(quote.amount.toNumber()).toBe(2500);
    expect(quote.unit).toBe('msat');
    const result = await wallet.meltProofsBolt11(quote, received);
    expect(result.quote.state).toBe('PAID');
    expect(total(result.change)).toBe(3000);
  });
});
