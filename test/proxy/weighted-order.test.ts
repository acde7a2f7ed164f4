// The order in which a model's providers are tried (src/proxy/forward/upstreams.ts): each next one
// drawn with probability proportional to its weight among those left, every provider once.
import { describe, expect, it } from 'vitest';
import { weightedOrder } from '../../src/proxy/forward/upstreams.js';

const providers = [3, 2, 1].map((weight, i) => ({ name: String.fromCharCode(97 + i), config: { weight } }));

describe('weightedOrder', () => {
  it('tries every provider once, each first and second as often as its weight says', () => {
    const draws = 30_000;
    const first = new Map<string, number>();
    const secondAfterA = new Map<string, number>();
    let afterA = 0;
    for (let i = 0; i < draws; i++) {
      const order = weightedOrder(providers).map((p) => p.name);
      expect([...order].sort()).toEqual(['a', 'b', 'c']);
      first.set(order[0], (first.get(order[0]) ?? 0) + 1);
      if (order[0] === 'a') {
        afterA++;
        secondAfterA.set(order[1], (secondAfterA.get(order[1]) ?? 0) + 1);
      }
    }
    // Shares within 0.02 of 3/6, 2/6, 1/6 (the standard error is below 0.003); after a: 2/3 and 1/3.
    expect(Math.abs(first.get('a')! / draws - 3 / 6)).toBeLessThan(0.02);
    expect(Math.abs(first.get('b')! / draws - 2 / 6)).toBeLessThan(0.02);
    expect(Math.abs(first.get('c')! / draws - 1 / 6)).toBeLessThan(0.02);
    expect(Math.abs(secondAfterA.get('b')! / afterA - 2 / 3)).toBeLessThan(0.02);
  });

  it('keeps a single provider and no provider, and leaves the list it was given as it was', () => {
    expect(weightedOrder([providers[1]])).toEqual([providers[1]]);
    expect(weightedOrder([])).toEqual([]);
    const list = [...providers];
    weightedOrder(list);
    expect(list).toEqual(providers);
  });
});
