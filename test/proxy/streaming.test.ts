// Streaming billed requests: strict SSE framing, usage forced and billed, streams without usage,
// broken streams, callers who leave mid-stream, and an upstream that misbehaves on the wire.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/databases.js';
import { startFakeUpstream } from '../../src/fakeupstream/index.js';
import { chatBody, PRICES, startNode, testCost, TEST_MODEL, waitUntil, type Node } from './forward-helpers.js';

const auth = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

function events(text: string): string[] {
  return text.split('\n\n').filter((e) => e.trim());
}

describe.each(databaseKinds)('streaming on %s', (kind) => {
  let node: Node;
  let key: string;
  beforeAll(async () => {
    node = await startNode(kind, { env: { PROXY_UPSTREAM_TIMEOUT_MS: '800' } });
    key = await node.account(10_000_000);
  });
  afterAll(async () => {
    await node?.close();
  });
  beforeEach(() => node.upstream.resetFaults());

  const stream = (body: Record<string, unknown>, init: RequestInit = {}) =>
    fetch(`${node.url}/v1/chat/completions`, {
      method: 'POST',
      headers: auth(key),
      body: JSON.stringify(chatBody({ stream: true, ...body })),
      ...init,
    });

  it('keeps SSE strict: the usage chunk (with the cost) comes last before [DONE], nothing after', async () => {
    const before = await node.balance(key);
    const response = await stream({});
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const text = await response.text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    const list = events(text);
    expect(list.filter((e) => e === 'data: [DONE]')).toHaveLength(1);
    const usageChunk = JSON.parse(list.at(-2)!.slice(6));
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.cost.total_msat).toBe(testCost(usageChunk.usage));
    for (const e of list.slice(0, -2)) expect(JSON.parse(e.slice(6)).cost).toBeUndefined();
    // The caller did not ask for usage; the node asked the upstream for it.
    expect((node.upstream.requests.at(-1)!.body as any).stream_options).toEqual({ include_usage: true });
    expect(before.balance - (await node.balance(key)).balance).toBe(testCost(usageChunk.usage));
  });

  it("keeps the caller's own stream_options", async () => {
    const text = await (await stream({ stream_options: { include_usage: true } })).text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect((node.upstream.requests.at(-1)!.body as any).stream_options).toEqual({ include_usage: true });
  });

  it('bills a stream that ends without usage by an estimate of what it delivered', async () => {
    node.upstream.faults.omitUsage = true;
    node.upstream.faults.completionTokens = 8;
    const before = await node.balance(key);
    const text = await (await stream({})).text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    const delivered = events(text)
      .slice(0, -1)
      .map((e) => JSON.parse(e.slice(6)).choices[0]?.delta?.content ?? '')
      .join('');
    const row = (await node.ledger()).at(-1);
    expect(row).toMatchObject({ status: 'settled', usage_source: 'estimate' });
    expect(row.completion_tokens).toBe(Math.ceil(Buffer.byteLength(delivered) / 4));
    const charged = Number(row.charged_msat);
    expect(charged).toBe(
      row.prompt_tokens * PRICES.prompt + row.completion_tokens * PRICES.completion + PRICES.request,
    );
    expect(before.balance - (await node.balance(key)).balance).toBe(charged);
  });

  it("breaks the caller's stream when the upstream breaks, bills what was delivered, frees the rest", async () => {
    node.upstream.faults.resetAfterChunks = 3;
    const before = await node.balance(key);
    const response = await stream({});
    const failure = await response.text().catch((e) => e);
    expect(failure).toBeInstanceOf(Error);
    await waitUntil('the settlement', async () => (await node.balance(key)).reserved === 0);
    const row = (await node.ledger()).at(-1);
    expect(row).toMatchObject({ status: 'settled', usage_source: 'estimate' });
    expect(before.balance - (await node.balance(key)).balance).toBe(Number(row.charged_msat));
  });

  it('keeps reading the upstream to its usage when the caller leaves: a disconnect is not free', async () => {
    node.upstream.faults.chunkDelayMs = 60;
    node.upstream.faults.completionTokens = 10;
    const before = await node.balance(key);
    const controller = new AbortController();
    const response = await stream({}, { signal: controller.signal });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    await waitUntil('the settlement', async () => (await node.ledger()).at(-1).status !== 'reserved', 5000);
    const row = (await node.ledger()).at(-1);
    expect(row).toMatchObject({ status: 'settled', usage_source: 'upstream', completion_tokens: 10 });
    const after = await node.balance(key);
    expect(after.reserved).toBe(0);
    expect(before.balance - after.balance).toBe(testCost({ prompt_tokens: row.prompt_tokens, completion_tokens: 10 }));
  });

  it('cuts a stream whose upstream falls silent (idle timeout) and frees what was not delivered', async () => {
    node.upstream.faults.chunkDelayMs = 1500;
    const before = await node.balance(key);
    const failure = await (await stream({})).text().catch((e) => e);
    expect(failure).toBeInstanceOf(Error);
    await waitUntil('the settlement', async () => (await node.balance(key)).reserved === 0);
    const row = (await node.ledger()).at(-1);
    expect(['settled', 'released']).toContain(row.status);
    expect(before.balance - (await node.balance(key)).balance).toBe(Number(row.charged_msat));
  });

  it('meters a responses-API stream from its response.completed event', async () => {
    const before = await node.balance(key);
    const response = await fetch(`${node.url}/v1/responses`, {
      method: 'POST',
      headers: auth(key),
      body: JSON.stringify({ model: TEST_MODEL, input: 'hi there', stream: true }),
    });
    const text = await response.text();
    const completed = JSON.parse(
      events(text)
        .at(-1)!
        .split('\n')
        .find((l) => l.startsWith('data: '))!
        .slice(6),
    );
    const usage = completed.response.usage;
    const cost = usage.input_tokens * PRICES.prompt + usage.output_tokens * PRICES.completion + PRICES.request;
    expect(completed.cost.total_msat).toBe(cost);
    expect(before.balance - (await node.balance(key)).balance).toBe(cost);
  });
});

describe('an upstream that misbehaves on the wire', () => {
  it('parses events split anywhere and sends nothing after [DONE]', async () => {
    const usage = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 };
    const wire =
      'data: {"choices":[{"index":0,"delta":{"content":"a b c"}}],"usage":null}\r\n\r\n' +
      `data: {"choices":[],"usage":${JSON.stringify(usage)}}\r\n\r\n` +
      'data: [DONE]\r\n\r\n' +
      'data: {"after":"done"}\r\n\r\n';
    const upstream = createServer(async (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // Byte by byte: events arrive split at every possible place.
      for (const char of wire) {
        res.write(char);
        await new Promise((resolve) => setImmediate(resolve));
      }
      res.end();
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const fake = await startFakeUpstream();
    const node = await startNode('sqlite', {
      upstream: fake,
      env: { PROXY_UPSTREAM_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` },
    });
    try {
      const key = await node.account(100_000);
      const text = await (
        await fetch(`${node.url}/v1/chat/completions`, {
          method: 'POST',
          headers: auth(key),
          body: JSON.stringify(chatBody({ stream: true })),
        })
      ).text();
      expect(text).not.toContain('after');
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
      expect(text).toContain('"cost":{"total_msat":23');
      expect(await node.balance(key)).toMatchObject({ balance: 100_000 - 23, reserved: 0 });
    } finally {
      await node.close();
      await fake.close();
      upstream.closeAllConnections();
      upstream.close();
    }
  });
});
