// Generated billed request bodies and headers: whatever the caller sends, no 5xx from the node,
// and no reservation left behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNode, TEST_MODEL, type Node } from './forward-helpers.js';

function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

describe('billed requests under generated input', () => {
  let node: Node;
  let key: string;
  beforeAll(async () => {
    node = await startNode('sqlite');
    key = await node.account(50_000);
  });
  afterAll(async () => {
    await node?.close();
  });

  it('never answers 5xx and never leaves a reservation behind (400 cases)', async () => {
    const next = random(42);
    const pick = <T>(items: T[]) => items[Math.floor(next() * items.length)];
    const values = () =>
      pick<unknown>([
        undefined,
        null,
        true,
        0,
        -1,
        1.5,
        2 ** 53,
        1e300,
        '',
        'x',
        '😀'.repeat(50),
        [],
        {},
        [1, 'a'],
        { a: { b: [] } },
        TEST_MODEL,
        'unknown/model',
        16,
        100_000,
      ]);
    const statuses = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      const body: Record<string, unknown> = {};
      for (const field of [
        'model',
        'messages',
        'prompt',
        'input',
        'max_tokens',
        'max_completion_tokens',
        'n',
        'best_of',
        'stream',
        'stream_options',
      ]) {
        if (next() < 0.25) body[field] = values();
      }
      if (next() < 0.7) body.model = TEST_MODEL;
      if (next() < 0.5) body.messages = [{ role: pick<unknown>(['user', 'system', 7]), content: values() }];
      const path = pick([
        '/v1/chat/completions',
        '/v1/completions',
        '/v1/embeddings',
        '/v1/responses',
        '/v1//chat/completions/',
        '/v1/x/../chat/completions',
      ]);
      const raw = next() < 0.1 ? pick(['', '{', '[]', 'null', '"text"', '{"model":', '\u0000']) : JSON.stringify(body);
      const headers: Record<string, string> = {
        'content-type': pick(['application/json', 'text/plain', 'application/octet-stream']),
      };
      if (next() < 0.9) {
        headers.authorization = pick([
          `Bearer ${key}`,
          `Bearer ${key}`,
          'Bearer sk-nope',
          'Basic x',
          'Bearer cashuBgarbage',
        ]);
      }
      const response = await fetch(`${node.url}${path}`, { method: 'POST', headers, body: raw });
      await response.arrayBuffer();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      expect(response.status, `${path} ${raw.slice(0, 200)}`).toBeLessThan(500);
    }
    expect(statuses.get(200)).toBeGreaterThan(0);
    const account = await node.balance(key);
    expect(account.reserved).toBe(0);
    expect(account.balance).toBeGreaterThanOrEqual(0);
    const ledger = await node.ledger();
    expect(ledger.filter((row) => row.status === 'reserved')).toEqual([]);
    expect(
      ledger.filter((row) => row.status === 'settled').reduce((sum, row) => sum + Number(row.charged_msat), 0),
    ).toBe(50_000 - account.balance);
  }, 60_000);
});
