// The fault switch: each mode behaves as documented, and the books stay right under it.
import { getEncodedToken, Wallet } from '@cashu/cashu-ts';
import { afterEach, describe, expect, test } from 'vitest';
import { startDevMint, type DevMint, type FaultChange } from '../../src/devmint/index.js';
import { http, mintProofs, openMint, outputs, states, total, walletFor, wire } from './helpers.js';

async function networkError(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof Error)) throw new Error('expected a network error, the request succeeded');
  const cause = (error as Error & { cause?: { code?: string } }).cause;
  return cause?.code ?? error.message;
}

const CUT = /ECONNREFUSED|ECONNRESET|UND_ERR_SOCKET|other side closed/;

/**
 * While down, every request fails; a pooled keep-alive connection the client has not yet seen
 * closed fails as "reset", a new one as "refused". Returns the codes seen until a refusal.
 */
async function refusedWhileDown(url: string): Promise<string[]> {
  const seen: string[] = [];
  for (let i = 0; i < 10 && seen.at(-1) !== 'ECONNREFUSED'; i++) seen.push(await networkError(fetch(url)));
  for (const code of seen) expect(code).toMatch(CUT);
  expect(seen.at(-1)).toBe('ECONNREFUSED');
  return seen;
}

describe('dev mint faults', () => {
  let mint: DevMint;
  openMint((opened) => (mint = opened));
  afterEach(() => mint.faults.clear());

  /** A swap of 8 sat of fresh proofs under `fault`, whose connection is cut; the fault cleared after. */
  async function cutSwap(fault: FaultChange) {
    const proofs = await mintProofs(await walletFor(mint), mint, 8);
    const made = outputs(mint.keysetId(), [8]);
    await mint.faults.set(fault);
    expect(await networkError(http(mint, 'POST', '/v1/swap', { inputs: wire(proofs), outputs: made.wire }))).toMatch(
      CUT,
    );
    await mint.faults.clear();
    return { proofs, made };
  }

  test('down: connections refused, open keep-alive connections cut; back at the same URL after clear()', async () => {
    const wallet = await walletFor(mint); // holds a keep-alive connection now
    await mint.faults.set({ down: true });
    await refusedWhileDown(`${mint.url}/v1/info`);
    await expect(wallet.createMintQuoteBolt11(5)).rejects.toThrow();
    await mint.faults.clear();
    expect((await fetch(`${mint.url}/v1/info`)).status).toBe(200);
    expect((await wallet.createMintQuoteBolt11(5)).state).toBe('UNPAID');
  });

  test('down with forMs comes back by itself', async () => {
    await mint.faults.set({ down: true, forMs: 500 });
    await refusedWhileDown(`${mint.url}/v1/keys`);
    await expect
      .poll(
        () =>
          fetch(`${mint.url}/v1/keys`).then(
            (r) => r.status,
            () => 0,
          ),
        { timeout: 3000 },
      )
      .toBe(200);
    expect(mint.faults.current).toEqual({});
  });

  test('delayMs slows the NUT routes, not the dev routes', async () => {
    await mint.faults.set({ delayMs: 300 });
    let started = Date.now();
    expect((await http(mint, 'GET', '/v1/keysets')).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    // The dev route under a delay far longer than a busy machine's slowest answer: not delayed.
    await mint.faults.set({ delayMs: 20_000 });
    started = Date.now();
    expect((await http(mint, 'GET', '/dev/faults')).body).toEqual({ delayMs: 20_000 });
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  test('failSwaps: 500 before doing anything, the proofs stay unspent', async () => {
    const proofs = await mintProofs(await walletFor(mint), mint, 16);
    await mint.faults.set({ failSwaps: true });
    const response = await http(mint, 'POST', '/v1/swap', {
      inputs: wire(proofs),
      outputs: outputs(mint.keysetId(), [16]).wire,
    });
    expect(response.status).toBe(500);
    expect(response.body).toEqual({ detail: expect.any(String), code: 0 });
    expect(await states(mint, proofs)).toEqual(['UNSPENT']);
    await mint.faults.clear();
    expect(
      (await http(mint, 'POST', '/v1/swap', { inputs: wire(proofs), outputs: outputs(mint.keysetId(), [16]).wire }))
        .status,
    ).toBe(200);
  });

  test('dropSwaps: the connection is cut before the swap; the proofs stay unspent, the outputs unsigned', async () => {
    const { proofs, made } = await cutSwap({ dropSwaps: true });
    expect(await states(mint, proofs)).toEqual(['UNSPENT']);
    expect((await http(mint, 'POST', '/v1/restore', { outputs: made.wire })).body).toEqual({
      outputs: [],
      signatures: [],
    });
    expect((await http(mint, 'POST', '/v1/swap', { inputs: wire(proofs), outputs: made.wire })).status).toBe(200);
  });

  test('loseSwapResponses: the swap happens, the answer never comes; POST /v1/restore recovers it', async () => {
    const { proofs, made } = await cutSwap({ loseSwapResponses: true });
    expect(await states(mint, proofs)).toEqual(['SPENT']);
    const retry = await http(mint, 'POST', '/v1/swap', { inputs: wire(proofs), outputs: made.wire });
    expect(retry.body.code).toBe(11001);
    // The lost answer is recovered with NUT-09 restore, and unblinds to a spendable proof.
    const restored = await http(mint, 'POST', '/v1/restore', {
      outputs: [...made.wire, ...outputs(mint.keysetId(), [4]).wire],
    });
    expect(restored.body.outputs).toEqual(made.wire);
    expect(restored.body.signatures).toHaveLength(1);
    const recovered = made.data[0].toProof(restored.body.signatures[0], (await walletFor(mint)).getKeyset());
    expect(await states(mint, [recovered])).toEqual(['UNSPENT']);
    expect(
      (await http(mint, 'POST', '/v1/swap', { inputs: wire([recovered]), outputs: outputs(mint.keysetId(), [8]).wire }))
        .status,
    ).toBe(200);
  });

  test('noRestore: a mint without NUT-09 (404 on POST /v1/restore, /v1/info says so); swaps unaffected', async () => {
    const proofs = await mintProofs(await walletFor(mint), mint, 8);
    const made = outputs(mint.keysetId(), [8]);
    expect((await http(mint, 'POST', '/dev/faults', { noRestore: true })).status).toBe(200);
    expect(mint.faults.current).toEqual({ noRestore: true });
    expect((await http(mint, 'GET', '/v1/info')).body.nuts['9']).toEqual({ supported: false });
    expect((await http(mint, 'POST', '/v1/swap', { inputs: wire(proofs), outputs: made.wire })).status).toBe(200);
    for (const payload of [{ outputs: made.wire }, { nonsense: 1 }]) {
      const restore = await http(mint, 'POST', '/v1/restore', payload);
      expect(restore.status).toBe(404);
      expect(restore.body).toEqual({ detail: 'no route POST /v1/restore', code: 0 });
    }
    await mint.faults.clear();
    expect((await http(mint, 'GET', '/v1/info')).body.nuts['9']).toEqual({ supported: true });
    expect((await http(mint, 'POST', '/v1/restore', { outputs: made.wire })).body.signatures).toHaveLength(1);
  });

  test('holdSwaps: held swaps wait; released, they are performed even for a client that hung up', async () => {
    const [a, b] = [await mintProofs(await walletFor(mint), mint, 4), await mintProofs(await walletFor(mint), mint, 2)];
    await mint.faults.set({ holdSwaps: true });
    const answered = http(mint, 'POST', '/v1/swap', { inputs: wire(a), outputs: outputs(mint.keysetId(), [4]).wire });
    const abort = new AbortController();
    const abandoned = fetch(`${mint.url}/v1/swap`, {
      method: 'POST',
      signal: abort.signal,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: wire(b), outputs: outputs(mint.keysetId(), [2]).wire }),
    });
    await expect.poll(async () => (await http(mint, 'GET', '/dev/swaps/held')).body.held).toBe(2);
    expect(await states(mint, [...a, ...b])).toEqual(['UNSPENT', 'UNSPENT']);
    abort.abort(); // the client "crashes" after sending its swap
    await expect(abandoned).rejects.toThrow();
    expect((await http(mint, 'POST', '/dev/swaps/release', {})).body).toEqual({ released: 2 });
    expect((await answered).status).toBe(200);
    await expect.poll(() => states(mint, b)).toEqual(['SPENT']);
    expect(await states(mint, a)).toEqual(['SPENT']);
  });

  test('holdSwaps then drop: the connection is cut, nothing performed', async () => {
    const proofs = await mintProofs(await walletFor(mint), mint, 4);
    await mint.faults.set({ holdSwaps: true });
    const dropped = networkError(
      http(mint, 'POST', '/v1/swap', { inputs: wire(proofs), outputs: outputs(mint.keysetId(), [4]).wire }),
    );
    await expect.poll(() => mint.faults.heldSwaps).toBe(1);
    expect(mint.faults.releaseSwaps('drop')).toBe(1);
    expect(await dropped).toMatch(CUT);
    expect(await states(mint, proofs)).toEqual(['UNSPENT']);
  });

  test('lie: 200 with nonsense instead of answers, nothing done; the wallet notices', async () => {
    const wallet = await walletFor(mint);
    const proofs = await mintProofs(wallet, mint, 32);
    await mint.faults.set({ lie: true });
    const bodies = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const response = await http(mint, 'POST', '/v1/swap', {
        inputs: wire(proofs),
        outputs: outputs(mint.keysetId(), [32]).wire,
      });
      expect(response.status).toBe(200);
      expect(
        Array.isArray(response.body?.signatures) &&
          response.body.signatures.length === 1 &&
          typeof response.body.signatures[0].C_ === 'string' &&
          /^0[23]/.test(response.body.signatures[0].C_),
      ).toBe(false);
      bodies.add(response.text);
    }
    expect(bodies.size).toBe(5);
    await expect(new Wallet(mint.url).loadMint()).rejects.toThrow();
    await expect(
      (await Promise.resolve(wallet)).receive(getEncodedToken({ mint: mint.url, proofs, unit: 'sat' })),
    ).rejects.toThrow();
    await mint.faults.clear();
    expect(await states(mint, proofs)).toEqual(['UNSPENT']);
  });

  test('set() merges, clear() resets; the dev routes drive the same switch', async () => {
    await mint.faults.set({ delayMs: 10 });
    await mint.faults.set({ failSwaps: true });
    expect(mint.faults.current).toEqual({ delayMs: 10, failSwaps: true });
    await mint.faults.set({ delayMs: 0 });
    expect(mint.faults.current).toEqual({ failSwaps: true });
    expect((await http(mint, 'DELETE', '/dev/faults')).body).toEqual({});
    expect((await http(mint, 'POST', '/dev/faults', { lie: true })).status).toBe(200);
    expect(mint.faults.current).toEqual({ lie: true });
    expect((await http(mint, 'POST', '/dev/faults', { down: true })).status).toBe(400); // nothing could bring it back
    expect((await http(mint, 'POST', '/dev/faults', { down: true, forMs: 500 })).status).toBe(200);
    await refusedWhileDown(`${mint.url}/v1/keys`);
    await expect
      .poll(
        () =>
          fetch(`${mint.url}/dev/faults`).then(
            (r) => r.json(),
            () => 'down',
          ),
        { timeout: 3000 },
      )
      .toEqual({});
  });

  test('mintToken works again once the faults are cleared', async () => {
    const token = await mint.mintToken(21);
    expect(total(await (await walletFor(mint)).receive(token))).toBe(21);
  });
});

test('close() while down does not hang', async () => {
  const mint = await startDevMint();
  await mint.faults.set({ down: true });
  await mint.close();
  await refusedWhileDown(`${mint.url}/v1/info`);
});
