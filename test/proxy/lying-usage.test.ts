// An upstream whose `usage` lies or is broken (absurd, negative, fractional, non-numeric, missing):
// never a 500, the charge never above the request's ceiling (its prompt at one token a byte, its
// output at its cap; above the reservation drawn from the balance), unreadable counts estimated,
// in JSON answers and streams alike, on both databases (PostgreSQL once failed on counts above 2^31).
import { beforeEach, describe, expect, it } from 'vitest';
import { openForSuite } from '../support/lifecycle.js';
import { databaseKinds } from '../support/databases.js';
import { chatBody, PRICES, startNode, TEST_MODEL, type Node } from './forward-helpers.js';

const MAX = Number.MAX_SAFE_INTEGER;
const MAX_TOKENS = 40;
const CHAT = '/v1/chat/completions';

/** What a lie is billed as: a count, or 'prompt'/'output' for the estimate of that side. */
type Expected = { prompt: number | 'estimate'; completion: number | 'estimate' };

const LIES: [string, string, Expected][] = [
  ['absurd (1e15)', '{"prompt_tokens":1e15,"completion_tokens":1e15}', { prompt: 1e15, completion: 1e15 }],
  ['beyond 2^53 and 1e999', '{"prompt_tokens":1e300,"completion_tokens":1e999}', { prompt: MAX, completion: MAX }],
  ['negative', '{"prompt_tokens":-5,"completion_tokens":3}', { prompt: 'estimate', completion: 3 }],
  ['fractional', '{"prompt_tokens":2.5,"completion_tokens":3.2}', { prompt: 3, completion: 4 }],
  ['non-numeric', '{"prompt_tokens":"12","completion_tokens":null}', { prompt: 'estimate', completion: 'estimate' }],
  ['not an object', '"lots"', { prompt: 'estimate', completion: 'estimate' }],
  ['empty', '{}', { prompt: 'estimate', completion: 'estimate' }],
];

describe.each(databaseKinds)('lying upstream usage on %s', (kind) => {
  let node: Node;
  openForSuite(
    () => startNode(kind),
    (opened) => (node = opened),
  );
  beforeEach(() => node.upstream.resetFaults());

  async function post(key: string, path: string, body: Record<string, unknown>) {
    const text = JSON.stringify(body);
    const response = await fetch(`${node.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: text,
    });
    return { response, bodyBytes: Buffer.byteLength(text), text: await response.text() };
  }

  /** The request's ledger row, and the balance it left: charged exactly, reservation freed. */
  async function settledRow(key: string, before: number) {
    const row = (await node.ledger()).at(-1);
    expect(row.status).toBe('settled');
    const charged = Number(row.charged_msat);
    expect(charged).toBeLessThanOrEqual(Number(row.reserved_msat));
    expect(await node.balance(key)).toEqual({ balance: before - charged, reserved: 0, spent: charged, requests: 1 });
    return { row, charged, reserved: Number(row.reserved_msat) };
  }

  type Settled = Awaited<ReturnType<typeof settledRow>>;

  /** The counts billed (an estimate: ⌈bytes ÷ 4⌉ of the body, of the output); the charge, at most the ceiling. */
  function expectCharge({ row, charged }: Settled, expected: Expected, bodyBytes: number, outBytes: number) {
    const prompt = expected.prompt === 'estimate' ? Math.ceil(bodyBytes / 4) : expected.prompt;
    const completion = expected.completion === 'estimate' ? Math.ceil(outBytes / 4) : expected.completion;
    expect([Number(row.prompt_tokens), Number(row.completion_tokens)]).toEqual([prompt, completion]);
    const estimated = expected.prompt === 'estimate' || expected.completion === 'estimate';
    expect(row.usage_source).toBe(estimated ? 'estimate' : 'upstream');
    const cost = prompt * PRICES.prompt + completion * PRICES.completion + PRICES.request;
    const ceiling = bodyBytes * PRICES.prompt + MAX_TOKENS * PRICES.completion + PRICES.request;
    expect(charged).toBe(Math.min(cost, ceiling));
  }

  describe.each(LIES)('usage %s', (_name, usage, expected) => {
    it('in a JSON answer: answered 200, billed as documented', async () => {
      const key = await node.account(1_000_000);
      node.upstream.faults.usage = usage;
      const { response, bodyBytes, text } = await post(key, CHAT, chatBody({ max_tokens: MAX_TOKENS }));
      expect(response.status).toBe(200);
      const json = JSON.parse(text);
      const settled = await settledRow(key, 1_000_000);
      // The row's reservation grew by what the settlement drew from the balance beside it.
      expect(Number(response.headers.get('x-cashu-reserved-msat'))).toBeLessThanOrEqual(settled.reserved);
      expect(Number(response.headers.get('x-cashu-cost-msat'))).toBe(settled.charged);
      expect(json.cost.total_msat).toBe(settled.charged);
      // A JSON answer's output estimate counts its bytes as the upstream sent them (without the node's cost).
      const { cost: _cost, ...answer } = json;
      const answerBytes = Buffer.byteLength(JSON.stringify(answer).replace(JSON.stringify(answer.usage), usage));
      expectCharge(settled, expected, bodyBytes, answerBytes);
    });

    it("in a stream's usage chunk: the stream completes, billed as documented", async () => {
      const key = await node.account(1_000_000);
      node.upstream.faults.usage = usage;
      const { response, bodyBytes, text } = await post(key, CHAT, chatBody({ max_tokens: MAX_TOKENS, stream: true }));
      expect(response.status).toBe(200);
      expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
      const chunks = text
        .split('\n\n')
        .filter((e) => e.startsWith('data: {'))
        .map((e) => JSON.parse(e.slice(6)));
      const delivered = chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('');
      const settled = await settledRow(key, 1_000_000);
      expect(chunks.at(-1).cost.total_msat).toBe(settled.charged);
      expectCharge(settled, expected, bodyBytes, Buffer.byteLength(delivered));
    });
  });

  it('bills a JSON answer without usage by estimate', async () => {
    const key = await node.account(1_000_000);
    node.upstream.faults.omitUsage = true;
    const { response, text } = await post(key, CHAT, chatBody({ max_tokens: MAX_TOKENS }));
    expect(response.status).toBe(200);
    expect(JSON.parse(text).usage).toBeUndefined();
    const { row, charged } = await settledRow(key, 1_000_000);
    expect(row.usage_source).toBe('estimate');
    expect(charged).toBeGreaterThan(PRICES.request);
  });

  it('charges embeddings and the responses API at most their ceiling for absurd usage', async () => {
    for (const [path, body, usage] of [
      ['/v1/embeddings', { model: 'test/embed', input: 'hello' }, '{"prompt_tokens":4e15,"total_tokens":4e15}'],
      ['/v1/responses', { model: TEST_MODEL, input: 'hi' }, '{"input_tokens":1e18,"output_tokens":1}'],
    ] as const) {
      const key = await node.account(1_000_000);
      node.upstream.faults.usage = usage;
      const { response, text } = await post(key, path, body);
      expect(response.status).toBe(200);
      const { row, charged, reserved } = await settledRow(key, 1_000_000);
      expect(charged).toBe(reserved);
      expect(row.usage_source).toBe('upstream');
      expect(JSON.parse(text).cost).toMatchObject({ total_msat: charged });
      expect(JSON.parse(text).cost.uncharged_msat).toBeGreaterThan(0);
    }
  });
});
