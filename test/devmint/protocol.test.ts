// The NUT routes over raw HTTP: what a wallet library would not send, and the error codes the
// NUT documents give for it (error_codes.md).
import {
  blindMessage,
  deriveKeysetId,
  getEncodedToken,
  hashToCurve,
  pointFromHex,
  unblindSignature,
  type Proof,
} from '@cashu/cashu-ts';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { startDevMint, type DevMint } from '../../src/devmint/index.js';
import { http, mintProofs, openMint, outputs, states, total, walletFor, wire } from './helpers.js';

const yOf = (proof: Proof) => hashToCurve(new TextEncoder().encode(proof.secret)).toHex(true);

describe('info, keys, keysets (NUT-01, 02, 06)', () => {
  let mint: DevMint;
  openMint((opened) => (mint = opened), { inputFeePpk: 100, seed: 'protocol-test' });

  test('GET /v1/info says what it is and which NUTs it supports', async () => {
    const { status, body } = await http(mint, 'GET', '/v1/info');
    expect(status).toBe(200);
    expect(body.name).toContain('DEVELOPMENT TOOL THAT HOLDS NO REAL VALUE');
    expect(body.description).toContain('DEVELOPMENT TOOL THAT HOLDS NO REAL VALUE');
    expect(body.urls).toEqual([mint.url]);
    expect(body.nuts['4'].methods).toEqual([expect.objectContaining({ method: 'bolt11', unit: 'sat' })]);
    expect(body.nuts['5'].methods).toEqual([expect.objectContaining({ method: 'bolt11', unit: 'sat' })]);
    for (const nut of ['7', '8', '9', '12']) expect(body.nuts[nut]).toEqual({ supported: true });
  });

  test('GET /v1/keys: the active keyset, one compressed key per power of two, id derived as NUT-02 says', async () => {
    const { status, body } = await http(mint, 'GET', '/v1/keys');
    expect(status).toBe(200);
    expect(body.keysets).toHaveLength(1);
    const [keyset] = body.keysets;
    expect(keyset).toMatchObject({ unit: 'sat', active: true, input_fee_ppk: 100 });
    expect(Object.keys(keyset.keys).map(Number)).toEqual(Array.from({ length: 31 }, (_, i) => 2 ** i));
    for (const key of Object.values(keyset.keys)) expect(key).toMatch(/^0[23][0-9a-f]{64}$/);
    expect(keyset.id).toBe(deriveKeysetId(keyset.keys, { unit: 'sat', input_fee_ppk: 100 }));
    expect(keyset.id).toBe(mint.keysetId());
  });

  test('GET /v1/keysets and /v1/keys/{id}; an unknown id → 12001', async () => {
    const keysets = await http(mint, 'GET', '/v1/keysets');
    expect(keysets.body).toEqual({
      keysets: [{ id: mint.keysetId(), unit: 'sat', active: true, input_fee_ppk: 100, final_expiry: null }],
    });
    const one = await http(mint, 'GET', `/v1/keys/${mint.keysetId()}`);
    expect(one.body.keysets[0].id).toBe(mint.keysetId());
    const unknown = await http(mint, 'GET', '/v1/keys/01' + '0'.repeat(64));
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe(12001);
    expect(typeof unknown.body.detail).toBe('string');
  });

  test('the same seed gives the same keysets after a restart, and its proofs stay valid', async () => {
    const restarted = await startDevMint({ inputFeePpk: 100, seed: 'protocol-test' });
    const other = await startDevMint({ inputFeePpk: 100, seed: 'another seed' });
    const unseeded = await startDevMint({ inputFeePpk: 100 });
    try {
      expect(restarted.keysetId()).toBe(mint.keysetId());
      expect((await http(restarted, 'GET', '/v1/keys')).body).toEqual((await http(mint, 'GET', '/v1/keys')).body);
      expect(other.keysetId()).not.toBe(mint.keysetId());
      expect(unseeded.keysetId()).not.toBe(mint.keysetId());
      const proofs = await mintProofs(await walletFor(mint), mint, 20);
      const received = await (
        await walletFor(restarted)
      ).receive(getEncodedToken({ mint: restarted.url, proofs, unit: 'sat' }));
      expect(total(received)).toBe(20 - 1);
    } finally {
      await Promise.all([restarted.close(), other.close(), unseeded.close()]);
    }
  });
});

describe('swap (NUT-03) and fees (NUT-02) over raw HTTP', () => {
  let mint: DevMint;
  let keysetId: string;
  beforeAll(async () => {
    mint = await startDevMint({ inputFeePpk: 400 });
    keysetId = mint.keysetId();
  });
  afterAll(() => mint.close());

  async function fresh(amount: number) {
    return mintProofs(await walletFor(mint), mint, amount);
  }

  test('inputs − ceil(Σ ppk / 1000) must equal outputs (11005 otherwise), nothing spent on refusal', async () => {
    const proofs = await fresh(7); // 4 + 2 + 1: fee ceil(1200 / 1000) = 2
    expect(proofs).toHaveLength(3);
    for (const amounts of [[4, 2], [4, 2, 1], [4]]) {
      const refused = await http(mint, 'POST', '/v1/swap', {
        inputs: wire(proofs),
        outputs: outputs(keysetId, amounts).wire,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.code).toBe(11005);
    }
    expect(await states(mint, proofs)).toEqual(['UNSPENT', 'UNSPENT', 'UNSPENT']);
    const accepted = await http(mint, 'POST', '/v1/swap', {
      inputs: wire(proofs),
      outputs: outputs(keysetId, [1, 4]).wire,
    });
    expect(accepted.status).toBe(200);
    expect(accepted.body.signatures.map((s: { amount: number }) => s.amount)).toEqual([1, 4]);
    for (const signature of accepted.body.signatures) {
      expect(signature).toEqual({
        id: keysetId,
        amount: expect.any(Number),
        C_: expect.stringMatching(/^0[23][0-9a-f]{64}$/),
        dleq: { e: expect.stringMatching(/^[0-9a-f]{64}$/), s: expect.stringMatching(/^[0-9a-f]{64}$/) },
      });
    }
    expect(await states(mint, proofs)).toEqual(['SPENT', 'SPENT', 'SPENT']);
  });

  test('the signatures unblind to proofs the mint accepts', async () => {
    const proofs = await fresh(16);
    const made = outputs(keysetId, [8, 4, 2, 1]);
    const { body } = await http(mint, 'POST', '/v1/swap', { inputs: wire(proofs), outputs: made.wire });
    const keyset = (await walletFor(mint)).getKeyset();
    const unblinded = made.data.map((d, i) => d.toProof(body.signatures[i], keyset));
    expect(await states(mint, unblinded)).toEqual(['UNSPENT', 'UNSPENT', 'UNSPENT', 'UNSPENT']);
    const again = await http(mint, 'POST', '/v1/swap', {
      inputs: wire(unblinded),
      outputs: outputs(keysetId, [8, 4, 1]).wire,
    });
    expect(again.status).toBe(200);
  });

  const refusals: [
    string,
    number,
    (p: ReturnType<typeof wire>, id: string) => { inputs: unknown[]; outputs: unknown[] },
  ][] = [
    [
      'duplicate inputs',
      11007,
      (p, id) => ({ inputs: [p[0], p[0]], outputs: outputs(id, [p[0].amount * 2 - 1]).wire }),
    ],
    [
      'duplicate outputs',
      11008,
      (p, id) => {
        const o = outputs(id, [p[0].amount - 1]).wire;
        return { inputs: [p[0]], outputs: [o[0], o[0]] };
      },
    ],
    [
      'an input of an unknown keyset',
      12001,
      (p, id) => ({ inputs: [{ ...p[0], id: '01' + 'ab'.repeat(32) }], outputs: outputs(id, [p[0].amount - 1]).wire }),
    ],
    [
      'an output of an unknown keyset',
      12001,
      (p) => ({ inputs: [p[0]], outputs: outputs('01' + 'ab'.repeat(32), [p[0].amount - 1]).wire }),
    ],
    [
      'a forged signature',
      10001,
      (p, id) => ({ inputs: [{ ...p[0], C: p[1].C }], outputs: outputs(id, [p[0].amount - 1]).wire }),
    ],
    [
      'an inflated amount',
      10001,
      (p, id) => ({ inputs: [{ ...p[0], amount: p[0].amount * 2 }], outputs: outputs(id, [p[0].amount * 2 - 1]).wire }),
    ],
    [
      'an output amount that is not a power of two',
      0,
      (p, id) => ({ inputs: [p[0]], outputs: [{ ...outputs(id, [1]).wire[0], amount: 3 }] }),
    ],
    [
      'an output that is not a curve point',
      0,
      (p, id) => ({
        inputs: [p[0]],
        outputs: [{ ...outputs(id, [p[0].amount - 1]).wire[0], B_: '02' + 'ff'.repeat(32) }],
      }),
    ],
    ['no outputs', 0, (p) => ({ inputs: [p[0]], outputs: [] })],
  ];
  test.each(refusals)('%s → %i, and nothing is spent', async (_name, code, build) => {
    const proofs = await fresh(24); // 16 + 8
    const response = await http(mint, 'POST', '/v1/swap', build(wire(proofs), keysetId));
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ detail: expect.any(String), code });
    expect(await states(mint, proofs)).toEqual(['UNSPENT', 'UNSPENT']);
  });

  test('spent inputs → 11001; outputs signed before → 11003; refusals are atomic', async () => {
    const proofs = await fresh(24);
    const first = outputs(keysetId, [8, 4, 2, 1, 8]);
    expect((await http(mint, 'POST', '/v1/swap', { inputs: wire(proofs), outputs: first.wire })).status).toBe(200);
    const spent = await http(mint, 'POST', '/v1/swap', {
      inputs: wire(proofs),
      outputs: outputs(keysetId, [8, 4, 2, 1, 8]).wire,
    });
    expect(spent.body.code).toBe(11001);
    // New inputs, but one output was signed before: refused, inputs untouched, the fresh outputs still signable.
    const more = await fresh(24);
    const fresh2 = outputs(keysetId, [8, 4, 2, 1]);
    const reused = await http(mint, 'POST', '/v1/swap', {
      inputs: wire(more),
      outputs: [...fresh2.wire, first.wire[0]],
    });
    expect(reused.body.code).toBe(11003);
    expect(await states(mint, more)).toEqual(['UNSPENT', 'UNSPENT']);
    const retry = await http(mint, 'POST', '/v1/swap', {
      inputs: wire(more),
      outputs: [...fresh2.wire, ...outputs(keysetId, [8]).wire],
    });
    expect(retry.status).toBe(200);
  });

  test('secrets with NUT-10 spending conditions are refused (10001), not spent as if unlocked', async () => {
    const secret = JSON.stringify(['P2PK', { nonce: 'ab'.repeat(16), data: '02' + '11'.repeat(32), tags: [] }]);
    const blinded = blindMessage(new TextEncoder().encode(secret));
    const signed = await http(mint, 'POST', '/v1/swap', {
      inputs: wire(await fresh(8)),
      outputs: [{ amount: 4, id: keysetId, B_: blinded.B_.toHex(true) }, ...outputs(keysetId, [2, 1]).wire],
    });
    const key = pointFromHex((await http(mint, 'GET', '/v1/keys')).body.keysets[0].keys['4']);
    const locked = {
      id: keysetId,
      amount: 4,
      secret,
      C: unblindSignature(pointFromHex(signed.body.signatures[0].C_), blinded.r, key).toHex(true),
    };
    const refused = await http(mint, 'POST', '/v1/swap', { inputs: [locked], outputs: outputs(keysetId, [2, 1]).wire });
    expect(refused.body).toEqual({ code: 10001, detail: expect.stringContaining('P2PK') });
  });

  test('malformed bodies → 400 with {detail, code}', async () => {
    const proofs = await fresh(8);
    for (const bad of [
      {},
      { inputs: 'x', outputs: [] },
      { inputs: [{ ...wire(proofs)[0], amount: '8' }], outputs: [] },
    ]) {
      const response = await http(mint, 'POST', '/v1/swap', bad);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ detail: expect.any(String), code: 0 });
    }
    const notJson = await fetch(`${mint.url}/v1/swap`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"inputs": [',
    });
    expect(notJson.status).toBe(400);
  });

  test('key rotation: outputs of an inactive keyset → 12002, its proofs still redeem', async () => {
    const rotating = await startDevMint();
    try {
      const oldId = rotating.keysetId();
      const proofs = await mintProofs(await walletFor(rotating), rotating, 12);
      const newId = rotating.rotateKeyset();
      expect(newId).not.toBe(oldId);
      expect((await http(rotating, 'GET', '/v1/keys')).body.keysets.map((k: { id: string }) => k.id)).toEqual([newId]);
      expect(
        (await http(rotating, 'GET', '/v1/keysets')).body.keysets.map((k: { id: string; active: boolean }) => [
          k.id,
          k.active,
        ]),
      ).toEqual([
        [oldId, false],
        [newId, true],
      ]);
      const inactive = await http(rotating, 'POST', '/v1/swap', {
        inputs: wire(proofs),
        outputs: outputs(oldId, [8, 4]).wire,
      });
      expect(inactive.body.code).toBe(12002);
      const moved = await http(rotating, 'POST', '/v1/swap', {
        inputs: wire(proofs),
        outputs: outputs(newId, [8, 4]).wire,
      });
      expect(moved.status).toBe(200);
      expect(moved.body.signatures.every((s: { id: string }) => s.id === newId)).toBe(true);
    } finally {
      await rotating.close();
    }
  });
});

describe('quotes, melt and checkstate errors (NUT-04, 05, 07, 23)', () => {
  let mint: DevMint;
  openMint((opened) => (mint = opened));

  test('mint quotes: unknown unit 11013, bad amounts 11006, outputs not matching the quote 11005', async () => {
    expect((await http(mint, 'POST', '/v1/mint/quote/bolt11', { amount: 10, unit: 'usd' })).body.code).toBe(11013);
    expect((await http(mint, 'POST', '/v1/mint/quote/bolt11', { amount: 0, unit: 'sat' })).body.code).toBe(11006);
    expect((await http(mint, 'POST', '/v1/mint/quote/bolt11', { amount: 2 ** 31, unit: 'sat' })).body.code).toBe(11006);
    const quote = (await http(mint, 'POST', '/v1/mint/quote/bolt11', { amount: 10, unit: 'sat' })).body;
    expect(quote).toEqual({
      quote: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      request: expect.stringMatching(/^lnbcrt100n1/),
      amount: 10,
      unit: 'sat',
      state: 'UNPAID',
      expiry: expect.any(Number),
    });
    expect((await http(mint, 'POST', `/dev/quotes/${quote.quote}/pay`)).body.state).toBe('PAID');
    const wrong = await http(mint, 'POST', '/v1/mint/bolt11', {
      quote: quote.quote,
      outputs: outputs(mint.keysetId(), [8]).wire,
    });
    expect(wrong.body.code).toBe(11005);
    expect((await http(mint, 'GET', `/v1/mint/quote/bolt11/${quote.quote}`)).body.state).toBe('PAID');
    const right = await http(mint, 'POST', '/v1/mint/bolt11', {
      quote: quote.quote,
      outputs: outputs(mint.keysetId(), [8, 2]).wire,
    });
    expect(right.status).toBe(200);
    expect((await http(mint, 'GET', '/v1/mint/quote/bolt11/nope')).status).toBe(400);
  });

  test('melt quotes: not an invoice → 0, amountless → 11011; too few inputs → 11005 with nothing spent', async () => {
    expect((await http(mint, 'POST', '/v1/melt/quote/bolt11', { request: 'hello', unit: 'sat' })).body.code).toBe(0);
    expect(
      (await http(mint, 'POST', '/v1/melt/quote/bolt11', { request: 'lnbcrt1pjqqqqqpp5qqqq', unit: 'sat' })).body.code,
    ).toBe(11011);
    const invoice = (await http(mint, 'POST', '/dev/invoices', { amount: 50 })).body.request;
    const quote = (await http(mint, 'POST', '/v1/melt/quote/bolt11', { request: invoice, unit: 'sat' })).body;
    expect(quote).toMatchObject({
      request: invoice,
      amount: 50,
      fee_reserve: 1,
      unit: 'sat',
      state: 'UNPAID',
      payment_preimage: null,
    });
    const proofs = await mintProofs(await walletFor(mint), mint, 50);
    const short = await http(mint, 'POST', '/v1/melt/bolt11', { quote: quote.quote, inputs: wire(proofs) });
    expect(short.body.code).toBe(11005);
    expect(await states(mint, proofs)).toEqual(proofs.map(() => 'UNSPENT'));
    await http(mint, 'POST', '/dev/melts/fail-next', { detail: 'route not found' });
    const more = await mintProofs(await walletFor(mint), mint, 64);
    const failed = await http(mint, 'POST', '/v1/melt/bolt11', { quote: quote.quote, inputs: wire(more) });
    expect(failed.body).toEqual({ code: 20004, detail: expect.stringContaining('route not found') });
    const paid = await http(mint, 'POST', '/v1/melt/bolt11', { quote: quote.quote, inputs: wire(more) });
    expect(paid.body).toMatchObject({ state: 'PAID', payment_preimage: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(paid.body.change).toBeUndefined(); // no blank outputs given: no change (NUT-08)
  });

  test('while a melt is in flight: its quote → 20005, its blank outputs → 11004, its inputs → 11002', async () => {
    const proofs = await mintProofs(await walletFor(mint), mint, 16);
    const quote = (
      await http(mint, 'POST', '/v1/melt/quote/bolt11', { request: mint.lightning.createInvoice(10), unit: 'sat' })
    ).body;
    const blank = outputs(mint.keysetId(), [1, 1, 1]).wire; // fee reserve 1 → one blank output would do
    const held = mint.lightning.holdNextMelt();
    const melting = http(mint, 'POST', '/v1/melt/bolt11', { quote: quote.quote, inputs: wire(proofs), outputs: blank });
    await expect
      .poll(async () => (await http(mint, 'GET', `/v1/melt/quote/bolt11/${quote.quote}`)).body.state)
      .toBe('PENDING');
    const other = await mintProofs(await walletFor(mint), mint, 8);
    expect((await http(mint, 'POST', '/v1/melt/bolt11', { quote: quote.quote, inputs: wire(other) })).body.code).toBe(
      20005,
    );
    expect(
      (await http(mint, 'POST', '/v1/swap', { inputs: wire(other), outputs: [{ ...blank[0], amount: 8 }] })).body.code,
    ).toBe(11004);
    expect(
      (await http(mint, 'POST', '/v1/swap', { inputs: wire(proofs), outputs: outputs(mint.keysetId(), [16]).wire }))
        .body.code,
    ).toBe(11002);
    held.settle('paid');
    const paid = (await melting).body;
    expect(paid.state).toBe('PAID');
    // 16 in, 10 paid, no fee: 6 back as 2 + 4, imprinted on the first two blank outputs in order.
    expect(paid.change.map((c: { amount: number }) => c.amount)).toEqual([2, 4]);
    expect(
      (await http(mint, 'POST', '/v1/restore', { outputs: blank })).body.outputs.map(
        (o: { amount: number }) => o.amount,
      ),
    ).toEqual([2, 4]);
  });

  test('quotes expire after an hour: unpaid mint quotes and melt quotes → 20007', async () => {
    const mintQuote = (await http(mint, 'POST', '/v1/mint/quote/bolt11', { amount: 4, unit: 'sat' })).body;
    const meltQuote = (
      await http(mint, 'POST', '/v1/melt/quote/bolt11', { request: mint.lightning.createInvoice(2), unit: 'sat' })
    ).body;
    expect(meltQuote.expiry - Math.floor(Date.now() / 1000)).toBeGreaterThan(3500);
    const proofs = await mintProofs(await walletFor(mint), mint, 4);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 2 * 3600_000);
      expect((await http(mint, 'POST', `/dev/quotes/${mintQuote.quote}/pay`)).body.code).toBe(20007);
      expect(
        (
          await http(mint, 'POST', '/v1/mint/bolt11', {
            quote: mintQuote.quote,
            outputs: outputs(mint.keysetId(), [4]).wire,
          })
        ).body.code,
      ).toBe(20007);
      expect(
        (await http(mint, 'POST', '/v1/melt/bolt11', { quote: meltQuote.quote, inputs: wire(proofs) })).body.code,
      ).toBe(20007);
    } finally {
      vi.useRealTimers();
    }
    expect(await states(mint, proofs)).toEqual(proofs.map(() => 'UNSPENT'));
  });

  test('autoPay: mint quotes are PAID as soon as they exist', async () => {
    const auto = await startDevMint({ autoPay: true });
    try {
      const wallet = await walletFor(auto);
      const quote = await wallet.createMintQuoteBolt11(3);
      expect(quote.state).toBe('PAID');
      expect(total(await wallet.mintProofsBolt11(3, quote.quote))).toBe(3);
    } finally {
      await auto.close();
    }
  });

  test('checkstate answers in the order asked; bad Ys → 400', async () => {
    const wallet = await walletFor(mint);
    const [spent, unspent] = [await mintProofs(wallet, mint, 4), await mintProofs(wallet, mint, 2)];
    await wallet.receive(getEncodedToken({ mint: mint.url, proofs: spent, unit: 'sat' }));
    const Ys = [yOf(unspent[0]), yOf(spent[0]), yOf(unspent[0])];
    const { body } = await http(mint, 'POST', '/v1/checkstate', { Ys });
    expect(body.states).toEqual([
      { Y: Ys[0], state: 'UNSPENT', witness: null },
      { Y: Ys[1], state: 'SPENT', witness: null },
      { Y: Ys[2], state: 'UNSPENT', witness: null },
    ]);
    expect((await http(mint, 'POST', '/v1/checkstate', { Ys: ['zz'] })).status).toBe(400);
  });
});
