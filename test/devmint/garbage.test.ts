// Garbage in: every NUT route answers malformed and hostile bodies with 4xx {detail, code},
// never 5xx; a mutation that happens to be a valid, balanced swap is the only thing that spends.
import { expect, test } from 'vitest';
import type { DevMint } from '../../src/devmint/index.js';
import { http, mintProofs, openMint, outputs, states, walletFor, wire } from './helpers.js';

/** A small seeded PRNG (mulberry32), so a failure can be replayed. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let mint: DevMint;
openMint((opened) => (mint = opened));

test('400 mutated POST bodies: 4xx with {detail, code}, never 5xx; only valid swaps spend', async () => {
  const proofs = await mintProofs(await walletFor(mint), mint, 31); // 16 8 4 2 1
  const good = { inputs: wire(proofs), outputs: outputs(mint.keysetId(), [16, 8, 4, 2, 1]).wire };
  const next = random(20261122);
  const pick = <T>(items: T[]): T => items[Math.floor(next() * items.length)];
  const weird: unknown[] = [
    null,
    true,
    -1,
    0,
    2 ** 53,
    1e300,
    1.5,
    '',
    'x',
    '0'.repeat(66),
    '02' + 'f'.repeat(64),
    '03' + '0'.repeat(64),
    [],
    {},
    [null],
    { amount: 1 },
    '💥'.repeat(50),
    'lnbc1',
    'lnbc10000000000000000m1qq',
    'cashuBxyz',
  ];
  const mutate = (value: unknown, depth = 0): unknown => {
    if (depth > 3 || next() < 0.15) return pick(weird);
    if (Array.isArray(value)) {
      const copy = value.map((item) => (next() < 0.3 ? mutate(item, depth + 1) : item));
      if (next() < 0.2) copy.push(pick(value.length ? value : weird));
      if (next() < 0.2) copy.splice(0, 1);
      return copy;
    }
    if (value && typeof value === 'object') {
      const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
      for (const key of Object.keys(copy)) {
        if (next() < 0.3) copy[key] = mutate(copy[key], depth + 1);
        else if (next() < 0.05) delete copy[key];
      }
      return copy;
    }
    return pick(weird);
  };
  const routes: [string, unknown][] = [
    ['/v1/swap', good],
    ['/v1/melt/bolt11', { quote: 'x', inputs: good.inputs, outputs: good.outputs }],
    ['/v1/mint/bolt11', { quote: 'x', outputs: good.outputs }],
    ['/v1/mint/quote/bolt11', { amount: 10, unit: 'sat' }],
    ['/v1/melt/quote/bolt11', { request: mint.lightning.createInvoice(5), unit: 'sat' }],
    ['/v1/checkstate', { Ys: ['02' + 'a'.repeat(64)] }],
    ['/v1/restore', { outputs: good.outputs }],
  ];
  const spentBySwaps = new Set<string>();
  for (let i = 0; i < 400; i++) {
    const [path, base] = routes[i % routes.length];
    const candidate = mutate(base);
    const response = await http(mint, 'POST', path, candidate);
    if (response.status >= 500 || (response.status >= 400 && typeof response.body?.detail !== 'string')) {
      throw new Error(`POST ${path} ${JSON.stringify(candidate)} → ${response.status} ${response.text}`);
    }
    if (path === '/v1/melt/bolt11') expect(response.status).toBeGreaterThanOrEqual(400); // its quote does not exist
    if (path === '/v1/swap' && response.status === 200) {
      // Dropping an input and its matching output keeps a swap valid: then it must be balanced.
      const { inputs, outputs: made } = candidate as {
        inputs: { amount: number; secret: string }[];
        outputs: { amount: number }[];
      };
      expect(inputs.reduce((sum, p) => sum + p.amount, 0)).toBe(made.reduce((sum, o) => sum + o.amount, 0));
      for (const input of inputs) spentBySwaps.add(input.secret);
    }
  }
  expect(await states(mint, proofs)).toEqual(proofs.map((p) => (spentBySwaps.has(p.secret) ? 'SPENT' : 'UNSPENT')));
  for (const text of ['', '{', 'null', '[]', '"x"', '{"inputs": [], "outputs": []}']) {
    const response = await fetch(`${mint.url}/v1/swap`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: text,
    });
    expect(response.status).toBe(400);
  }
});
