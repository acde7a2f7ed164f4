// Helpers of the wallet tests: HTTP calls to the node, and a cashu-ts wallet on a mint.
import { Wallet } from '@cashu/cashu-ts';
import { send, type Answer, type Target } from '../support/http.js';

export type { Answer };

/**
 * A request to `base + path` (or injected into an app); `body` is the answer parsed as JSON
 * (undefined when it is not).
 */
export async function call(
  base: Target,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  payload?: string,
): Promise<Answer> {
  const answer = await send(base, method, path, { headers, body: payload });
  return { ...answer, body: answer.json };
}

export const bearer = (credential: string) => ({ authorization: `Bearer ${credential}` });

export const topup = (base: Target, key: string, token: string) =>
  call(base, 'POST', `/v1/wallet/topup?ecash_token=${encodeURIComponent(token)}`, bearer(key));

export const info = (base: Target, key: string) => call(base, 'GET', '/v1/wallet/', bearer(key));

export const refund = (base: Target, key: string) => call(base, 'POST', '/v1/wallet/refund', bearer(key));

/** Opens an account with a token as the bearer; returns its sk- key. */
export async function openAccount(base: string, token: string): Promise<string> {
  const answer = await info(base, token);
  if (answer.status !== 200) throw new Error(`opening an account failed: ${answer.status} ${answer.text}`);
  return answer.body.api_key;
}

/** Receives a token at its mint with cashu-ts (a swap): the amount received. */
export async function receiveAtMint(mintUrl: string, token: string, unit = 'sat'): Promise<number> {
  const wallet = new Wallet(mintUrl, { unit });
  await wallet.loadMint();
  const proofs = await wallet.receive(token);
  return proofs.reduce((sum, p) => sum + Number(typeof p.amount === 'object' ? p.amount.toNumber() : p.amount), 0);
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
