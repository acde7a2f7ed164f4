// The optional state file: a restarted dev mint remembers what it spent, signed and quoted.
import { getEncodedToken, isMintOperationError } from '@cashu/cashu-ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { startDevMint } from '../../src/devmint/index.js';
import { http, mintProofs, states, total, walletFor } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'devmint-state-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('spent proofs, unspent proofs, quotes and keys survive a restart with --state', async () => {
  const stateFile = join(dir, 'mint.json');
  const first = await startDevMint({ stateFile, port: 0 });
  const wallet = await walletFor(first);
  const spent = await mintProofs(wallet, first, 16);
  await wallet.receive(getEncodedToken({ mint: first.url, proofs: spent, unit: 'sat' }));
  const kept = await mintProofs(wallet, first, 8);
  const unpaid = (await http(first, 'POST', '/v1/mint/quote/bolt11', { amount: 5, unit: 'sat' })).body;
  const keysetId = first.keysetId();
  await first.close();
  expect(JSON.parse(readFileSync(stateFile, 'utf8')).seed).toMatch(/^[0-9a-f]{64}$/);

  const second = await startDevMint({ stateFile, port: 0 });
  try {
    expect(second.keysetId()).toBe(keysetId);
    expect(await states(second, spent)).toEqual(spent.map(() => 'SPENT'));
    expect(await states(second, kept)).toEqual(kept.map(() => 'UNSPENT'));
    const again = await (
      await walletFor(second)
    )
      .receive(getEncodedToken({ mint: second.url, proofs: spent, unit: 'sat' }))
      .catch((e: unknown) => e);
    expect(isMintOperationError(again) && again.code).toBe(11001);
    expect(
      total(await (await walletFor(second)).receive(getEncodedToken({ mint: second.url, proofs: kept, unit: 'sat' }))),
    ).toBe(8);
    expect((await http(second, 'GET', `/v1/mint/quote/bolt11/${unpaid.quote}`)).body).toEqual(unpaid);
  } finally {
    await second.close();
  }
});

test('a state file refuses another seed; another fee rotates to a new keyset', async () => {
  const stateFile = join(dir, 'fees.json');
  const first = await startDevMint({ stateFile, seed: 'one' });
  const oldId = first.keysetId();
  await first.close();
  await expect(startDevMint({ stateFile, seed: 'two' })).rejects.toThrow(/another seed/);
  const second = await startDevMint({ stateFile, inputFeePpk: 100 });
  try {
    expect(second.keysetId()).not.toBe(oldId);
    const keysets = (await http(second, 'GET', '/v1/keysets')).body.keysets;
    expect(keysets).toEqual([
      expect.objectContaining({ id: oldId, active: false, input_fee_ppk: 0 }),
      expect.objectContaining({ id: second.keysetId(), active: true, input_fee_ppk: 100 }),
    ]);
  } finally {
    await second.close();
  }
});
