// Anthropic's Messages API (POST /v1/messages), as Claude Code and routstrd send it: the key in
// x-api-key, billed from Anthropic's usage (cached input counted as input), JSON and SSE.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import { request } from '../support/http.js';
import { PRICES, startNode, TEST_MODEL, type Node } from './forward-helpers.js';

const ANTHROPIC_HEADERS = { 'anthropic-version': '2023-06-01' };

const messageBody = (extra: Record<string, unknown> = {}) => ({
  model: TEST_MODEL,
  max_tokens: 256,
  messages: [{ role: 'user', content: 'Hello, Claude' }],
  ...extra,
});

const costOf = (input: number, output: number) => input * PRICES.prompt + output * PRICES.completion + PRICES.request;

describe.each(databaseKinds)('POST /v1/messages on %s', (kind) => {
  let node: Node;
  let key: string;
  beforeAll(async () => {
    node = await startNode(kind);
    key = await node.account(10_000_000);
  });
  afterAll(() => node?.close());
  beforeEach(() => node.upstream.resetFaults());

  const send = (body: unknown, headers: Record<string, string> = { 'x-api-key': key }) =>
    request(`${node.url}/v1/messages`, 'POST', { json: body, headers: { ...ANTHROPIC_HEADERS, ...headers } });

  it('bills a JSON answer from its input and output tokens, the key taken from x-api-key', async () => {
    const before = await node.balance(key);
    const answer = await send(messageBody());
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text' }] });
    const { input_tokens: input, output_tokens: output } = answer.json.usage;
    const cost = costOf(input, output);
    expect(Number(answer.headers.get('x-cashu-cost-msat'))).toBe(cost);
    expect(answer.json.usage.cost).toMatchObject({ total_msats: cost, input_msats: input, output_msats: output * 2 });
    expect(before.balance - (await node.balance(key)).balance).toBe(cost);
    // The caller's key stays with the node; the upstream gets the operator's, where it looks for it.
    const sent = node.upstream.requests.at(-1)!;
    expect(sent.headers['x-api-key']).toBe('operator-key');
    expect(JSON.stringify(sent.headers)).not.toContain(key);
    expect(sent.body).toMatchObject({ max_tokens: 256 });
  });

  it('counts cache writes and reads as input', async () => {
    node.upstream.faults.usage =
      '{"input_tokens":5,"cache_creation_input_tokens":20,"cache_read_input_tokens":100,"output_tokens":7}';
    const before = await node.balance(key);
    const answer = await send(messageBody());
    expect(answer.status).toBe(200);
    expect(Number(answer.headers.get('x-cashu-cost-msat'))).toBe(costOf(125, 7));
    expect(before.balance - (await node.balance(key)).balance).toBe(costOf(125, 7));
  });

  it('bills a stream once, from message_start and message_delta, and passes every event on', async () => {
    const before = await node.balance(key);
    const answer = await send(messageBody({ stream: true }));
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = answer.text
      .split('\n\n')
      .filter((event) => event.includes('data: '))
      .map((event) => JSON.parse(event.slice(event.indexOf('data: ') + 6)));
    expect(events.map((event) => event.type)).toEqual([
      'message_start',
      'content_block_start',
      ...events.filter((event) => event.type === 'content_block_delta').map(() => 'content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const input = events[0].message.usage.input_tokens;
    const delta = events.find((event) => event.type === 'message_delta');
    const cost = costOf(input, delta.usage.output_tokens);
    expect(delta.usage.cost).toMatchObject({ total_msats: cost });
    expect(delta.cost).toMatchObject({ total_msat: cost });
    expect(before.balance - (await node.balance(key)).balance).toBe(cost);
    const rows = (await node.ledger()).filter((row) => row.path === '/v1/messages' && row.status === 'settled');
    expect(rows.at(-1)).toMatchObject({ prompt_tokens: input, completion_tokens: delta.usage.output_tokens });
  });

  it('asks for payment without a key, and caps max_tokens to what the balance holds', async () => {
    const unpaid = await send(messageBody(), {});
    expect(unpaid.status).toBe(402);
    const poor = await node.account(1_000);
    const answer = await send(messageBody({ max_tokens: 100_000 }), { 'x-api-key': poor });
    expect(answer.status).toBe(200);
    expect((node.upstream.requests.at(-1)!.body as { max_tokens: number }).max_tokens).toBeLessThan(500);
  });

  it('bills only /v1/messages itself: other paths ending in /messages are writes at the flat price', async () => {
    const answer = await request(`${node.url}/v1/threads/thread_1/messages`, 'POST', {
      json: { role: 'user', content: 'no model here' },
      token: key,
    });
    expect(answer.status).toBe(404); // the fake upstream has no such route; nothing was metered
    expect(answer.headers.get('x-cashu-cost-msat')).toBe('0');
  });
});
