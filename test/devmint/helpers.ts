// Shared helpers of the dev mint tests: a cashu-ts wallet on the mint, and raw HTTP for the
// requests no well-behaved wallet would send.
import { OutputData, Wallet, type Proof } from '@cashu/cashu-ts';
import { startDevMint, type DevMint, type DevMintOptions } from '../../src/devmint/index.js';
import { request, type Answer } from '../support/http.js';
import { openForSuite } from '../support/lifecycle.js';

/** A dev mint started before the describe's tests (handed to `ready`) and closed after them. */
export function openMint(ready: (mint: DevMint) => void, options: DevMintOptions = {}): void {
  openForSuite(() => startDevMint(options), ready);
}

export async function walletFor(mint: DevMint, options: ConstructorParameters<typeof Wallet>[1] = {}): Promise<Wallet> {
  const wallet = new Wallet(mint.url, { unit: mint.unit, ...options });
  await wallet.loadMint();
  return wallet;
}

/** Quote, pay (fake Lightning), mint: the NUT-04 flow as a wallet runs it. */
export async function mintProofs(wallet: Wallet, mint: DevMint, amount: number): Promise<Proof[]> {
  const quote = await wallet.createMintQuoteBolt11(amount);
  mint.lightning.payInvoice(quote.quote);
  return wallet.mintProofsBolt11(amount, quote.quote);
}

/** cashu-ts types amounts as its Amount class, but some paths (OutputData.toProof) hand out plain numbers. */
export const amountOf = (proof: Proof) =>
  Number(typeof proof.amount === 'object' ? proof.amount.toNumber() : proof.amount);

export const total = (proofs: Proof[]) => proofs.reduce((sum, proof) => sum + amountOf(proof), 0);

/** Proofs as JSON on the wire. */
export const wire = (proofs: Proof[]) =>
  proofs.map((p) => ({ id: p.id, amount: amountOf(p), secret: p.secret, C: p.C }));

/** Fresh blinded outputs for the given amounts, and their wire form. */
export function outputs(keysetId: string, amounts: number[]) {
  const data = amounts.map((amount) => OutputData.createSingleRandomData(amount, keysetId));
  return {
    data,
    wire: data.map((d) => ({
      id: d.blindedMessage.id,
      amount: d.blindedMessage.amount.toNumber(),
      B_: d.blindedMessage.B_,
    })),
  };
}

/** A request to the mint, `body` sent as JSON; the answer's `body` is its JSON (undefined when it is not). */
export async function http(mint: DevMint, method: string, path: string, body?: unknown): Promise<Answer> {
  const answer = await request(mint.url + path, method, { json: body });
  return { ...answer, body: answer.json };
}

export async function states(mint: DevMint, proofs: Proof[]): Promise<string[]> {
  const wallet = await walletFor(mint);
  return (await wallet.checkProofsStates(proofs)).map((s) => s.state);
}
