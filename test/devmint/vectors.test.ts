// The mint's cryptography against the NUT documents' own test vectors (tests/00, 02, 12 in
// cashubtc/nuts): the conformance tests use cashu-ts on both sides, these do not.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { proofY } from '../../src/cashu/index.js';
import { signBlinded, type Keyset } from '../../src/devmint/keys.js';

const hex = (h: string) => Uint8Array.from(Buffer.from(h, 'hex'));

/** A keyset holding one private key for amount 1 (enough to sign a vector). */
function keysetWith(privateKey: string): Keyset {
  return {
    id: '00882760bfa2eb41',
    unit: 'sat',
    active: true,
    inputFeePpk: 0,
    keys: {},
    privateKeys: new Map([[1, hex(privateKey)]]),
  };
}

/** NUT-02 keyset id version 01, written from the document rather than taken from a library. */
function keysetIdV2(keys: Record<string, string>, unit: string, inputFeePpk: number, finalExpiry?: number): string {
  let preimage = Object.entries(keys)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([amount, key]) => `${amount}:${key.toLowerCase()}`)
    .join(',');
  preimage += `|unit:${unit}`;
  if (inputFeePpk) preimage += `|input_fee_ppk:${inputFeePpk}`;
  if (finalExpiry) preimage += `|final_expiry:${finalExpiry}`;
  return '01' + createHash('sha256').update(preimage, 'utf8').digest('hex');
}

describe('NUT-00 vectors', () => {
  test.each([
    ['00'.repeat(32), '024cce997d3b518f739663b757deaec95bcd9473c30a14ac2fd04023a739d1a725'],
    ['00'.repeat(31) + '01', '022e7158e11c9506f1aa4248bf531298daa7febd6194f003edcd9b93ade6253acf'],
    ['00'.repeat(31) + '02', '026cdbe15362df59cd1dd3c9c11de8aedac2106eca69236ecd9fbe117af897be4f'],
  ])('hash_to_curve(%s)', (message, point) => {
    // These messages are ASCII bytes, so the UTF-8 secret string carries them unchanged.
    expect(proofY(Buffer.from(message, 'hex').toString('latin1'))).toBe(point);
  });

  test.each([
    ['00'.repeat(31) + '01', '02a9acc1e48c25eeeb9289b5031cc57da9fe72f3fe2861d264bdc074209b107ba2'],
    ['7f'.repeat(32), '0398bc70ce8184d27ba89834d19f5199c84443c31131e48d3c1214db24247d005d'],
  ])('blind signature with k = %s', (k, C_) => {
    expect(signBlinded(keysetWith(k), 1, '02a9acc1e48c25eeeb9289b5031cc57da9fe72f3fe2861d264bdc074209b107ba2').C_).toBe(
      C_,
    );
  });
});

test('NUT-12 vector: the deterministic DLEQ nonce gives exactly e and s', () => {
  const signature = signBlinded(
    keysetWith('00'.repeat(31) + '02'),
    1,
    '02a9acc1e48c25eeeb9289b5031cc57da9fe72f3fe2861d264bdc074209b107ba2',
  );
  expect(signature.C_).toBe('0244eccfc7a348274458bb38044c7f3c389b3c2086c7ec18b5812d2877ab937787');
  expect(signature.dleq).toEqual({
    e: '2a16ffee280aff3c429045607f9b8e0bf8b35910c44c1b20b9dfaf01b263d7b3',
    s: '9df27731238334718d120d4f74611a7c668233f988e687ac3fb188f0a34a2dab',
  });
});

describe('NUT-02 keyset ids', () => {
  let plain: DevMint;
  let withFee: DevMint;
  beforeAll(async () => {
    [plain, withFee] = await Promise.all([startDevMint(), startDevMint({ inputFeePpk: 100 })]);
  });
  afterAll(() => Promise.all([plain.close(), withFee.close()]));

  test("the helper reproduces the document's vector 1", () => {
    const keys = {
      '1': '03a40f20667ed53513075dc51e715ff2046cad64eb68960632269ba7f0210e38bc',
      '2': '03fd4ce5a16b65576145949e6f99f445f8249fee17c606b688b504a849cdc452de',
      '4': '02648eccfa4c026960966276fa5a4cae46ce0fd432211a4f449bf84f13aa5f8303',
      '8': '02fdfd6796bfeac490cbee12f778f867f0a2c68f6508d17c649759ea0dc3547528',
    };
    expect(keysetIdV2(keys, 'sat', 100, 2059210353)).toBe(
      '015ba18a8adcd02e715a58358eb618da4a4b3791151a4bee5e968bb88406ccf76a',
    );
  });

  test("the mint's keyset ids follow the same rule, with and without a fee", async () => {
    for (const mint of [plain, withFee]) {
      const [keyset] = (await (await fetch(`${mint.url}/v1/keys`)).json()).keysets;
      expect(keyset.id).toBe(keysetIdV2(keyset.keys, keyset.unit, keyset.input_fee_ppk));
    }
  });
});
